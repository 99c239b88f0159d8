import { describe, expect, it } from "vitest";
import { agreement } from "./agreement.js";

/** Pairs from a 2×2 table: [human pass & judge pass, human pass & judge fail, …]. */
function pairsOf(table: number[][], categories: number[]): [number, number][] {
  const pairs: [number, number][] = [];
  table.forEach((row, i) =>
    row.forEach((count, j) => {
      for (let k = 0; k < count; k++) pairs.push([categories[i]!, categories[j]!]);
    }),
  );
  return pairs;
}

describe("agreement", () => {
  it("equals the hand computation on a 2×2 fixture (50 keys)", () => {
    // Human rows, judge columns, categories 0 (fail) and 1 (pass):
    //          judge 0  judge 1
    // human 0     20        5
    // human 1     10       15
    // po = 35/50 = 0.7; rows .5/.5, columns .6/.4; pe = .5×.6 + .5×.4 = .5; κ = .2/.5 = .4.
    // Fleiss, Cohen & Everitt: A = .4(1 − 1.1×.6)² + .3(1 − .9×.6)² = .10972,
    // B = .36 × (.1(.6 + .5)² + .2(.4 + .5)²) = .10188, C = (.4 − .5×.6)² = .01,
    // SE = √.2016 / (.5 × √50) = .126996…, 95%: .4 ± 1.959964 × SE.
    const result = agreement(
      "human",
      "judge",
      pairsOf(
        [
          [20, 5],
          [10, 15],
        ],
        [0, 1],
      ),
    );
    expect(result).toMatchObject({ human: "human", scorer: "judge", n: 50, categories: [0, 1] });
    expect(result.matrix).toEqual([
      [20, 5],
      [10, 15],
    ]);
    expect(result.rate).toBeCloseTo(0.7, 12);
    expect(result.kappa).toBeCloseTo(0.4, 12);
    const se = Math.sqrt(0.2016) / (0.5 * Math.sqrt(50));
    expect(se).toBeCloseTo(0.126996, 6);
    expect(result.interval!.stderr).toBeCloseTo(se, 12);
    expect(result.interval!.low).toBeCloseTo(0.4 - 1.959964 * se, 6);
    expect(result.interval!.high).toBeCloseTo(0.4 + 1.959964 * se, 6);
  });

  it("orders categories ascending and counts three of them (scores 1 to 3)", () => {
    const result = agreement("human:tone", "judge", [
      [3, 3],
      [1, 1],
      [1, 2],
      [2, 2],
      [2, 3],
      [3, 2],
    ]);
    expect(result.categories).toEqual([1, 2, 3]);
    expect(result.matrix).toEqual([
      [1, 1, 0],
      [0, 1, 1],
      [0, 1, 1],
    ]);
    // po = 3/6; rows 2/6 each; columns 1/6, 3/6, 2/6; pe = 6 × 2/36 = 1/3; κ = (1/2 − 1/3)/(2/3).
    expect(result.rate).toBeCloseTo(0.5, 12);
    expect(result.kappa).toBeCloseTo(0.25, 12);
  });

  it("gives κ 1 and a zero-width interval on perfect agreement", () => {
    const result = agreement(
      "human",
      "judge",
      pairsOf(
        [
          [5, 0],
          [0, 5],
        ],
        [0, 1],
      ),
    );
    expect(result.kappa).toBe(1);
    expect(result.interval).toEqual({ low: 1, high: 1, stderr: 0 });
  });

  it("has no κ when every value is one category, and nothing with no key", () => {
    const same = agreement("human", "judge", [
      [1, 1],
      [1, 1],
    ]);
    expect(same).toMatchObject({ rate: 1, kappa: null, interval: null, matrix: [[2]] });
    expect(agreement("human", "judge", [])).toMatchObject({
      n: 0,
      rate: null,
      kappa: null,
      interval: null,
      categories: [],
      matrix: [],
    });
  });
});
