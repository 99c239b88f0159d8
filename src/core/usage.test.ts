import { describe, expect, it } from "vitest";
import { OutcomeFold, type FoldedAttempt } from "./outcome-fold.js";
import type { Usage } from "./types.js";
import { addUsage, boughtUsage, carriedUsage, reusedUsage, trajectoryUsage } from "./usage.js";

const replayed: Usage = {
  inputTokens: 1000,
  outputTokens: 100,
  cachedInputTokens: 800,
  reasoningTokens: 40,
  costUsd: 0.002,
};
const bought: Usage = { inputTokens: 300, outputTokens: 30, cacheWriteTokens: 200, costUsd: 0.001 };

/** The two calls' whole usage, the replayed one counted as reused. */
const whole: Usage = {
  inputTokens: 1300,
  outputTokens: 130,
  cachedInputTokens: 800,
  cacheWriteTokens: 200,
  reasoningTokens: 40,
  costUsd: 0.003,
  reused: { ...replayed },
};

describe("an attempt's usage as its whole trajectory", () => {
  it("adds a replayed call's usage to the attempt, marked reused, and leaves it out of what was bought", () => {
    const usage = [reusedUsage(replayed), bought].reduce<Usage | null>(addUsage, null)!;
    expect(usage).toEqual(whole);
    expect(boughtUsage(usage)).toEqual({
      inputTokens: 300,
      outputTokens: 30,
      cachedInputTokens: 0,
      cacheWriteTokens: 200,
      reasoningTokens: 0,
      costUsd: 0.003 - 0.002,
    });
  });

  it.each([
    ["the whole is unpriced", { ...bought, costUsd: undefined }, replayed],
    ["the reused part used tokens at no known price", bought, { inputTokens: 5, outputTokens: 1 }],
  ])("has no known cost bought now when %s", (_what, now, before) => {
    const usage = addUsage(reusedUsage(before as Usage), now as Usage);
    expect(boughtUsage(usage).costUsd).toBeUndefined();
  });

  it("a usage with no reused part was all bought", () => {
    expect(boughtUsage(bought)).toEqual(bought);
  });

  it("carries a call an errored attempt bought: in the trajectory, counted as replayed, not in the figures", () => {
    const usage = [carriedUsage(replayed), bought].reduce<Usage | null>(addUsage, null)!;
    // The figures (what spend sums) are the bought call's alone.
    expect({ ...usage, carried: undefined }).toEqual({ ...bought, carried: undefined });
    expect(boughtUsage(usage)).toEqual(bought);
    expect(trajectoryUsage(usage)).toEqual(whole);
    expect(trajectoryUsage(bought)).toBe(bought);
  });
});

describe("the fold's spend figures with replayed calls", () => {
  const attempt = (sampleId: string, usage: Usage): FoldedAttempt => ({
    sampleId,
    epoch: 1,
    attempt: 1,
    status: "scored",
    fingerprint: "f",
    scores: [{ scorer: "exact", value: 1 }],
    usage,
    error: null,
    provenance: { kind: "executed" },
  });

  it("counts an attempt's whole trajectory in the run's total and only what it bought as spent now", () => {
    const fold = new OutcomeFold({
      fingerprintOf: () => "f",
      scorers: ["exact"],
      reducer: "mean",
      isNow: (a) => a.sampleId === "b",
    });
    fold.add(attempt("a", replayed));
    fold.add(attempt("b", addUsage(reusedUsage(replayed), bought)));
    const { spentNow, totalSpent, reused } = fold.finish();
    expect(spentNow).toMatchObject({
      inputTokens: 300,
      cacheWriteTokens: 200,
      cachedInputTokens: 0,
    });
    expect(spentNow.costUsd).toBeCloseTo(0.001, 15);
    expect(totalSpent).toMatchObject({
      inputTokens: 2300,
      outputTokens: 230,
      cachedInputTokens: 1600,
      cacheWriteTokens: 200,
      reasoningTokens: 80,
    });
    expect(totalSpent.costUsd).toBeCloseTo(0.005, 15);
    // Reused: the preserved outcome and the replayed calls (which are no outcome of their own).
    expect(reused).toMatchObject({ attempts: 1, inputTokens: 2000, cachedInputTokens: 1600 });
    expect(spentNow.inputTokens + reused.inputTokens).toBe(totalSpent.inputTokens);
    expect(spentNow.costUsd! + reused.costUsd!).toBeCloseTo(totalSpent.costUsd!, 15);
  });
});
