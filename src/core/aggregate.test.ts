import { describe, expect, it } from "vitest";
import { addUsage, emptyUsage, meanAndStderr, reduceEpochs, sumUsage } from "./aggregate.js";
import type { Usage } from "./types.js";

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

describe("usage totals", () => {
  const priced = (costUsd: number): Usage => ({ inputTokens: 10, outputTokens: 2, costUsd });
  const unpriced: Usage = { inputTokens: 7, outputTokens: 1 };
  const total = (usages: readonly (Usage | null)[]) => {
    const t = emptyUsage();
    for (const u of usages) addUsage(t, u);
    return t;
  };

  it("sums the cost of attempts that are all priced", () => {
    expect(total([priced(0.25), priced(0.5), null])).toEqual({
      attempts: 3,
      inputTokens: 20,
      outputTokens: 4,
      cachedInputTokens: 0,
      cacheWriteTokens: 0,
      reasoningTokens: 0,
      costUsd: 0.75,
      unpriced: 0,
    });
  });

  it("says unknown (null) when no attempt that used tokens was priced", () => {
    expect(total([unpriced, null, unpriced])).toEqual({
      attempts: 3,
      inputTokens: 14,
      outputTokens: 2,
      cachedInputTokens: 0,
      cacheWriteTokens: 0,
      reasoningTokens: 0,
      costUsd: null,
      unpriced: 2,
    });
  });

  it("keeps the priced part as a lower bound and counts the unpriced attempts", () => {
    expect(total([unpriced, priced(0.25), unpriced])).toMatchObject({ costUsd: 0.25, unpriced: 2 });
  });

  it("does not call attempts without usage or without tokens unpriced: they cost nothing", () => {
    const none = total([null, { inputTokens: 0, outputTokens: 0 }]);
    expect(none).toMatchObject({ attempts: 2, costUsd: 0, unpriced: 0 });
    expect(total([])).toEqual(emptyUsage());
  });

  it("gives the same figures in any order (a priced $0 attempt beside unpriced ones is unknown)", () => {
    const usages = [unpriced, priced(0), null, priced(0.125), unpriced];
    const orders = [
      usages,
      [...usages].reverse(),
      [usages[2]!, usages[4]!, usages[3]!, usages[0]!, usages[1]!],
    ];
    for (const order of orders) expect(total(order)).toMatchObject({ costUsd: 0.125, unpriced: 2 });
    for (const order of [
      [unpriced, priced(0)],
      [priced(0), unpriced],
    ])
      expect(total(order)).toMatchObject({ costUsd: null, unpriced: 1 });
  });

  it("sums totals: unknown plus known is a lower bound, unknown plus nothing stays unknown", () => {
    const known = total([priced(0.5)]);
    const unknown = total([unpriced]);
    expect(sumUsage(known, unknown)).toEqual({
      attempts: 2,
      inputTokens: 17,
      outputTokens: 3,
      cachedInputTokens: 0,
      cacheWriteTokens: 0,
      reasoningTokens: 0,
      costUsd: 0.5,
      unpriced: 1,
    });
    expect(sumUsage(unknown, emptyUsage(), unknown)).toMatchObject({ costUsd: null, unpriced: 2 });
    expect(sumUsage(known, known)).toMatchObject({ costUsd: 1, unpriced: 0 });
    expect(sumUsage()).toEqual(emptyUsage());
  });
});
