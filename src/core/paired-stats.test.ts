import { describe, expect, it } from "vitest";
import {
  comparePaired,
  mcnemarExact,
  mulberry32,
  PairedAccumulator,
  signFlipTest,
} from "./paired-stats.js";

const ones = (n: number) => Array.from({ length: n }, () => 1);

describe("mcnemarExact", () => {
  it.each([
    [10, 0, 2 * 0.5 ** 10],
    [0, 10, 2 * 0.5 ** 10],
    [0, 0, 1],
    [5, 5, 1],
    // 2 × P(X ≤ 1), X ~ Bin(6, ½) = 2 × 7/64
    [1, 5, 14 / 64],
    [3, 1, 2 * (5 / 16)],
  ])("b=%i, c=%i gives %f", (b, c, p) => {
    expect(mcnemarExact(b, c)).toBeCloseTo(p, 12);
  });

  it("stays finite for thousands of pairs", () => {
    expect(mcnemarExact(2000, 2000)).toBe(1);
    expect(mcnemarExact(1000, 900)).toBeGreaterThan(0.01);
    expect(mcnemarExact(1000, 700)).toBeLessThan(1e-10);
  });
});

describe("signFlipTest", () => {
  it("enumerates small sets exactly", () => {
    // Three differences of 0.5: 2 of the 8 sign patterns reach |sum| = 1.5.
    expect(signFlipTest([0.5, 0.5, 0.5, 0], 1000, mulberry32(1))).toEqual({
      pValue: 2 / 8,
      test: "permutation-exact",
    });
  });

  it("samples large sets with a fixed seed", () => {
    const d = Array.from({ length: 40 }, (_, i) => (i % 4 === 0 ? 0.2 : -0.3));
    const first = signFlipTest(d, 2000, mulberry32(7));
    expect(first.test).toBe("permutation");
    expect(first.pValue).toBeLessThan(0.01);
    expect(signFlipTest(d, 2000, mulberry32(7))).toEqual(first);
  });
});

describe("comparePaired", () => {
  it("finds 10 of 100 going from right to wrong a significant regression", () => {
    const a = ones(100);
    const b = a.map((v, i) => (i % 10 === 3 ? 0 : v));
    const c = comparePaired(a, b);
    expect(c).toMatchObject({ n: 100, meanA: 1, meanB: 0.9, test: "mcnemar-exact" });
    expect(c.delta).toBeCloseTo(-0.1, 12);
    expect(c.ciHigh!).toBeLessThan(0);
    expect(c.ciLow!).toBeLessThan(c.delta!);
    expect(c.pValue).toBeCloseTo(2 * 0.5 ** 10, 12);
    expect([c.improved, c.regressed, c.unchanged]).toEqual([0, 10, 90]);
  });

  it("finds identical runs unchanged: delta 0, p 1", () => {
    const a = [0, 1, 0.5, 0.25, 1];
    expect(comparePaired(a, [...a])).toMatchObject({
      delta: 0,
      ciLow: 0,
      ciHigh: 0,
      pValue: 1,
      test: "permutation-exact",
      improved: 0,
      regressed: 0,
      unchanged: 5,
    });
  });

  it("is deterministic and brackets the delta", () => {
    const a = Array.from({ length: 60 }, (_, i) => (i % 3) / 2);
    const b = a.map((v, i) => Math.min(1, v + (i % 5 === 0 ? 0.5 : 0)));
    const first = comparePaired(a, b);
    expect(comparePaired(a, b)).toEqual(first);
    expect(first.ciLow!).toBeLessThanOrEqual(first.delta!);
    expect(first.ciHigh!).toBeGreaterThanOrEqual(first.delta!);
    expect(first.ciLow!).toBeGreaterThan(0);
    expect(first.improved).toBeGreaterThan(0);
  });

  it("reports an empty comparison without figures", () => {
    expect(comparePaired([], [])).toMatchObject({ n: 0, delta: null, pValue: 1 });
  });
});

describe("PairedAccumulator", () => {
  const grades = (n: number, seed: number) => {
    const random = mulberry32(seed);
    const a = Array.from({ length: n }, () => Math.floor(random() * 5) / 4);
    const b = a.map((v) => Math.min(1, Math.max(0, v + (Math.floor(random() * 3) - 1) / 4)));
    return { a, b };
  };

  it.each([
    ["grades, sign-flip test", grades(3000, 3)],
    ["0/1 values, McNemar", { a: ones(2000), b: ones(2000).map((_, i) => (i % 7 === 0 ? 0 : 1)) }],
  ])("held as counts agrees with one draw per pair (%s)", (_, { a, b }) => {
    const counted = new PairedAccumulator();
    const drawn = new PairedAccumulator({ maxDistinct: 0 });
    a.forEach((x, i) => {
      counted.add(x, b[i]!);
      drawn.add(x, b[i]!);
    });
    const c = counted.finish();
    const d = drawn.finish();
    const { ciLow, ciHigh, pValue, ...exact } = c;
    expect(d).toMatchObject(exact);
    // Two Monte Carlo estimates of the same interval and p-value from different draws.
    expect(Math.abs(ciLow! - d.ciLow!)).toBeLessThan(0.003);
    expect(Math.abs(ciHigh! - d.ciHigh!)).toBeLessThan(0.003);
    expect(Math.abs(pValue - d.pValue)).toBeLessThan(0.02);
  });

  it("gives the arrays' means bit for bit, past the distinct values it holds as counts", () => {
    const random = mulberry32(9);
    const a = Array.from({ length: 3000 }, () => random());
    const b = a.map((v) => v * 0.9 + random() * 0.05);
    const c = comparePaired(a, b, { resamples: 200 });
    let sumA = 0;
    let sumD = 0;
    a.forEach((x, i) => {
      sumA += x;
      sumD += b[i]! - x;
    });
    expect(c.meanA).toBe(sumA / a.length);
    expect(c.delta).toBe(sumD / a.length);
    expect(c.ciHigh!).toBeLessThan(0);
    expect(c.test).toBe("permutation");
  });
});
