import { describe, expect, it } from "vitest";
import { metricsFromSums, meanAndStderr } from "./aggregate.js";
import { ExactSum } from "./exact-sum.js";
import { UsageSum } from "./usage-sum.js";

/** A deterministic stream of doubles of every magnitude a score or a cost takes. */
function values(seed: number, count: number): number[] {
  let state = seed;
  const next = (): number => {
    state = (state * 1103515245 + 12345) % 2147483648;
    return state / 2147483648;
  };
  return Array.from({ length: count }, () => {
    const pick = next();
    if (pick < 0.2) return Math.round(next());
    if (pick < 0.4) return next();
    if (pick < 0.6) return next() * 1e-7;
    if (pick < 0.8) return Math.floor(next() * 3) / 3;
    return next() * 2 ** -1060;
  });
}

function shuffled<T>(items: readonly T[], seed: number): T[] {
  const out = [...items];
  let state = seed;
  for (let i = out.length - 1; i > 0; i--) {
    state = (state * 48271) % 2147483647;
    const j = state % (i + 1);
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}

describe("ExactSum", () => {
  it.each([
    [[0.1, 0.2], 0.30000000000000004],
    [[0.1, 0.2, -0.1], 0.2],
    [[1e16, 1, -1e16], 1],
    [[2 ** -1074, 2 ** -1074], 2 ** -1073],
    [[0.5, 2 ** -54], 0.5],
    [[0.5, 2 ** -54, 2 ** -80], 0.5 + 2 ** -53],
    [[1, 2 ** -53], 1],
    [[1 + 2 ** -52, 2 ** -53], 1 + 2 ** -51],
    [[-0.75, 0.25], -0.5],
    [[], 0],
  ])("%j sums to %d, rounded once to nearest (ties to even)", (xs, expected) => {
    const sum = new ExactSum();
    for (const x of xs) sum.add(x);
    expect(sum.toNumber()).toBe(expected);
  });

  it("gives the same sum in any order, and subtracting what was added leaves no trace", () => {
    const xs = values(7, 2_000);
    const reference = new ExactSum();
    for (const x of xs) reference.add(x);
    for (const seed of [1, 2, 3]) {
      const sum = new ExactSum();
      const extra = values(seed + 100, 300);
      for (const x of extra) sum.add(x);
      for (const x of shuffled(xs, seed)) sum.add(x);
      for (const x of shuffled(extra, seed + 9)) sum.subtract(x);
      expect(sum.toNumber()).toBe(reference.toNumber());
      expect(sum.equals(reference)).toBe(true);
      expect(ExactSum.parse(sum.toString()).toNumber()).toBe(reference.toNumber());
    }
  });

  it("is the float sum when the float sum is exact, and at most half an ulp from the truth", () => {
    const xs = values(11, 500).map((x) => Math.round(x * 1024) / 1024);
    const sum = new ExactSum();
    let float = 0;
    for (const x of xs) {
      sum.add(x);
      float += x;
    }
    expect(sum.toNumber()).toBe(float);
  });

  it("refuses what has no exact value, and text that is not a sum", () => {
    expect(() => new ExactSum().add(Number.NaN)).toThrow(/finite/);
    expect(() => new ExactSum().add(Infinity)).toThrow(/finite/);
    expect(() => ExactSum.parse("1.5")).toThrow(/not an exact sum/);
  });
});

describe("metricsFromSums", () => {
  it("gives the same mean and standard error in any order", () => {
    const xs = values(3, 1_000).filter((x) => x >= 1e-7);
    const figures = meanAndStderr(xs);
    for (const seed of [4, 5, 6]) expect(meanAndStderr(shuffled(xs, seed))).toEqual(figures);
    expect(figures.mean).toBeCloseTo(xs.reduce((a, b) => a + b, 0) / xs.length, 12);
  });

  it("keeps the textbook figures for small sets", () => {
    expect(meanAndStderr([])).toEqual({ mean: null, stderr: null });
    expect(meanAndStderr([0.25])).toEqual({ mean: 0.25, stderr: 0 });
    expect(meanAndStderr([1, 0, 1, 1])).toEqual({ mean: 0.75, stderr: 0.25 });
    const sums = { n: 2, sum: new ExactSum().add(1), squares: new ExactSum().add(1) };
    expect(metricsFromSums(sums)).toEqual({ mean: 0.5, stderr: 0.5 });
  });
});

describe("UsageSum", () => {
  it("totals cost exactly in any order, and unknown only when nothing priced cost anything", () => {
    const usages = values(9, 400).map((cost, i) => ({
      inputTokens: i,
      outputTokens: 1,
      ...(i % 7 === 0 ? {} : { costUsd: cost }),
    }));
    const a = new UsageSum();
    for (const u of usages) a.add(u);
    const b = new UsageSum();
    for (const u of shuffled(usages, 3)) b.add(u);
    b.add(null).add(null, -1);
    expect(b.total()).toEqual(a.total());
    expect(a.total().unpriced).toBe(usages.filter((u) => u.costUsd === undefined).length);
    const unpricedOnly = new UsageSum().add({ inputTokens: 5, outputTokens: 1 });
    expect(unpricedOnly.total().costUsd).toBeNull();
    expect(new UsageSum().addScoring({ inputTokens: 1, outputTokens: 0 }).total().attempts).toBe(0);
  });
});
