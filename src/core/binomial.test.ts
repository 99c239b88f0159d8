import { describe, expect, it } from "vitest";
import { binomial, logFactorial, multinomial } from "./binomial.js";
import { mulberry32 } from "./paired-stats.js";

describe("logFactorial", () => {
  it.each([0, 1, 5, 255, 256, 1000, 123_457])("matches the sum of logarithms at %i", (n) => {
    let sum = 0;
    for (let i = 2; i <= n; i++) sum += Math.log(i);
    expect(Math.abs(logFactorial(n) - sum)).toBeLessThanOrEqual(1e-12 * Math.max(1, sum));
  });
});

describe("binomial", () => {
  it("draws Binomial(10, 0.3) with its probabilities", () => {
    const random = mulberry32(1);
    const seen = new Array<number>(11).fill(0);
    const draws = 100_000;
    for (let i = 0; i < draws; i++) seen[binomial(10, 0.3, random)]!++;
    let pmf = 0.7 ** 10;
    for (let k = 0; k <= 10; k++) {
      expect(Math.abs(seen[k]! / draws - pmf)).toBeLessThan(0.005);
      pmf *= ((10 - k) / (k + 1)) * (0.3 / 0.7);
    }
  });

  it.each([
    [1_000_000, 0.5],
    [200_000, 0.01],
    [50, 0.97],
    [7, 0.5],
  ])("has the mean and variance of Binomial(%i, %f)", (n, p) => {
    const random = mulberry32(7);
    const draws = 20_000;
    let sum = 0;
    let squares = 0;
    let outside = 0;
    for (let i = 0; i < draws; i++) {
      const k = binomial(n, p, random);
      if (!Number.isInteger(k) || k < 0 || k > n) outside++;
      sum += k;
      squares += k * k;
    }
    expect(outside).toBe(0);
    const mean = sum / draws;
    const variance = squares / draws - mean * mean;
    const sd = Math.sqrt(n * p * (1 - p));
    expect(Math.abs(mean - n * p)).toBeLessThan((5 * sd) / Math.sqrt(draws));
    expect(variance / (sd * sd)).toBeGreaterThan(0.95);
    expect(variance / (sd * sd)).toBeLessThan(1.05);
  });

  it("takes no draw at p 0 or 1 and none for n 0", () => {
    const never = () => {
      throw new Error("drew");
    };
    expect([binomial(5, 0, never), binomial(5, 1, never), binomial(0, 0.5, never)]).toEqual([
      0, 5, 0,
    ]);
  });
});

describe("multinomial", () => {
  it("hands out every draw, none to an empty category's share", () => {
    const out = new Float64Array(3);
    multinomial(1000, [10, 0, 30], mulberry32(3), out);
    expect(out[0]! + out[1]! + out[2]!).toBe(1000);
    expect(out[1]).toBe(0);
    expect(out[2]! / 1000).toBeGreaterThan(0.7);
  });
});
