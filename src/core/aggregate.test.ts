import { describe, expect, it } from "vitest";
import { meanAndStderr, reduceEpochs } from "./aggregate.js";

describe("reduceEpochs", () => {
  it.each([
    ["mean", [1, 0, 1, 0], 0.5],
    ["max", [0, 0.25, 1], 1],
    ["min", [0.5, 0.25, 1], 0.25],
    ["mode", [0, 1, 1], 1],
    ["mode", [0, 1], 1], // tie goes to the larger value
    ["pass@1", [1, 0, 0, 0], 0.25],
    ["pass@2", [1, 0, 0], 2 / 3],
    ["pass@3", [1, 0, 0], 1],
    ["pass@2", [0, 0, 0], 0],
    ["pass@5", [1, 0], 1], // k larger than the epochs scored: k = n
  ] as const)("%s of %j is %d", (reducer, values, expected) => {
    expect(reduceEpochs(values, reducer)).toBeCloseTo(expected, 12);
  });
});

describe("meanAndStderr", () => {
  it.each([
    [[], { mean: null, stderr: null }],
    [[0.4], { mean: 0.4, stderr: 0 }],
    [[0.5, 1], { mean: 0.75, stderr: Math.sqrt(0.125 / 2) }],
  ])("of %j", (values, expected) => {
    expect(meanAndStderr(values)).toEqual(expected);
  });
});
