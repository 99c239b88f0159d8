import { describe, expect, it } from "vitest";
import { aggregate, reduceEpochs, totalUsage, type OutcomeFacts } from "./aggregate.js";

const scored = (sampleId: string, epoch: number, value: number): OutcomeFacts => ({
  sampleId,
  epoch,
  status: "scored",
  scores: [{ scorer: "s", value }],
});

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

describe("aggregate", () => {
  it("reduces epochs per sample, then takes mean and standard error over samples", () => {
    const outcomes = [scored("a", 1, 1), scored("a", 2, 0), scored("b", 1, 1), scored("b", 2, 1)];
    const [m] = aggregate(outcomes, ["s"], "mean");
    expect(m).toMatchObject({ scorer: "s", mean: 0.75, samples: 2 });
    expect(m!.stderr).toBeCloseTo(Math.sqrt(0.125 / 2), 12);
  });

  it("ignores errored outcomes and reports null for a scorer nothing scored", () => {
    const outcomes: OutcomeFacts[] = [
      scored("a", 1, 1),
      { sampleId: "b", epoch: 1, status: "error", scores: [] },
    ];
    expect(aggregate(outcomes, ["s", "t"], "mean")).toEqual([
      { scorer: "s", mean: 1, stderr: 0, samples: 1 },
      { scorer: "t", mean: null, stderr: null, samples: 0 },
    ]);
  });

  it("gives bit-identical figures whatever order outcomes arrive in", () => {
    const outcomes = Array.from({ length: 200 }, (_, i) =>
      scored(`s${i % 67}`, 1 + (i % 3), (i * 0.37) % 1),
    );
    const expected = aggregate(outcomes, ["s"], "mean");
    for (let trial = 0; trial < 5; trial++) {
      const shuffled = [...outcomes].sort(() => Math.random() - 0.5);
      expect(aggregate(shuffled, ["s"], "mean")).toEqual(expected);
    }
  });
});

describe("totalUsage", () => {
  it("adds tokens and cost, treating missing usage as zero", () => {
    expect(
      totalUsage([
        { sampleId: "a", epoch: 1, usage: { inputTokens: 3, outputTokens: 2, costUsd: 0.1 } },
        { sampleId: "b", epoch: 1, usage: null },
        { sampleId: "c", epoch: 1, usage: { inputTokens: 1, outputTokens: 1 } },
      ]),
    ).toEqual({ attempts: 3, inputTokens: 4, outputTokens: 3, costUsd: 0.1 });
  });
});
