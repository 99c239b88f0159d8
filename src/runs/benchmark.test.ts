import { describe, expect, it } from "vitest";
import { newBenchmarkId, splitConcurrency } from "./benchmark.js";

describe("splitConcurrency", () => {
  it.each([
    [10, 3, [4, 3, 3]],
    [9, 3, [3, 3, 3]],
    [4, 4, [1, 1, 1, 1]],
    [2, 3, [1, 1, 1]],
    [1, 1, [1]],
  ])("%i slots over %i runs → %j", (total, parts, shares) => {
    expect(splitConcurrency(total, parts)).toEqual(shares);
  });
});

describe("newBenchmarkId", () => {
  it("is b_ and ten lowercase letters or digits", () => {
    expect(newBenchmarkId()).toMatch(/^b_[a-z0-9]{10}$/);
  });
});
