/**
 * Paired comparison statistics of two runs' per-sample values (pure, deterministic): the mean
 * delta with a 95 % paired-bootstrap interval (fixed seed), and a p-value by exact McNemar for
 * 0/1 values or a paired sign-flip permutation test otherwise.
 */

/** Which test gave the p-value. */
export type PairedTest = "mcnemar-exact" | "permutation-exact" | "permutation";

export interface PairedComparison {
  n: number;
  meanA: number | null;
  meanB: number | null;
  /** meanB − meanA: negative when B scores lower. */
  delta: number | null;
  ciLow: number | null;
  ciHigh: number | null;
  pValue: number;
  test: PairedTest;
  /** Pairs where B is higher, lower, equal. */
  improved: number;
  regressed: number;
  unchanged: number;
}

export interface PairedOptions {
  /** Bootstrap and Monte-Carlo resamples (default 10,000). */
  resamples?: number;
  seed?: number;
}

const DEFAULT_RESAMPLES = 10_000;
const DEFAULT_SEED = 0x5e7;
/** Up to this many non-zero differences the permutation test enumerates every sign pattern. */
const EXACT_PERMUTATION_MAX = 16;
const EPS = 1e-12;

/**
 * Compares paired values `a[i]`, `b[i]` (the same sample in runs A and B).
 *
 * @example comparePaired([1, 1, 1], [1, 0, 1]).delta // -1/3
 */
export function comparePaired(
  a: readonly number[],
  b: readonly number[],
  options: PairedOptions = {},
): PairedComparison {
  if (a.length !== b.length) throw new Error("comparePaired needs paired values");
  const n = a.length;
  const d = a.map((x, i) => b[i]! - x);
  let improved = 0;
  let regressed = 0;
  for (const x of d) {
    if (x > EPS) improved++;
    else if (x < -EPS) regressed++;
  }
  const counts = { improved, regressed, unchanged: n - improved - regressed };
  if (n === 0) {
    const test: PairedTest = "mcnemar-exact";
    return {
      n,
      meanA: null,
      meanB: null,
      delta: null,
      ciLow: null,
      ciHigh: null,
      pValue: 1,
      test,
      ...counts,
    };
  }
  const resamples = options.resamples ?? DEFAULT_RESAMPLES;
  const random = mulberry32(options.seed ?? DEFAULT_SEED);
  const [ciLow, ciHigh] = bootstrapInterval(d, resamples, random);
  const binary = [...a, ...b].every((v) => v === 0 || v === 1);
  const { pValue, test } = binary
    ? { pValue: mcnemarExact(regressed, improved), test: "mcnemar-exact" as const }
    : signFlipTest(d, resamples, random);
  return {
    n,
    meanA: mean(a),
    meanB: mean(b),
    delta: mean(d),
    ciLow,
    ciHigh,
    pValue,
    test,
    ...counts,
  };
}

/**
 * The two-sided exact McNemar p-value for `b` and `c` discordant pairs: twice the binomial(n,
 * ½) tail at min(b, c), at most 1.
 *
 * @example mcnemarExact(10, 0) // 2 × 0.5^10 = 0.001953125
 */
export function mcnemarExact(b: number, c: number): number {
  const n = b + c;
  if (n === 0) return 1;
  const k = Math.min(b, c);
  // P(X = i) built up in log space, so large n neither overflows nor underflows early.
  let logP = -n * Math.LN2;
  let tail = 0;
  for (let i = 0; i <= k; i++) {
    tail += Math.exp(logP);
    logP += Math.log(n - i) - Math.log(i + 1);
  }
  return Math.min(1, 2 * tail);
}

/**
 * The two-sided paired permutation p-value of differences `d` (signs flipped at random under
 * the null of no difference): exact up to `EXACT_PERMUTATION_MAX` non-zero differences, else
 * Monte Carlo with `(hits + 1) / (resamples + 1)`.
 *
 * @example signFlipTest([0, 0], 1000, mulberry32(1)).pValue // 1
 */
export function signFlipTest(
  d: readonly number[],
  resamples: number,
  random: () => number,
): { pValue: number; test: PairedTest } {
  const nonzero = d.filter((x) => Math.abs(x) > EPS);
  const observed = Math.abs(sumOf(nonzero));
  const m = nonzero.length;
  if (m === 0) return { pValue: 1, test: "permutation-exact" };
  const extreme = (s: number) => Math.abs(s) >= observed - 1e-9;
  if (m <= EXACT_PERMUTATION_MAX) {
    let hits = 0;
    const patterns = 2 ** m;
    for (let mask = 0; mask < patterns; mask++) {
      let s = 0;
      for (let i = 0; i < m; i++) s += mask & (1 << i) ? -nonzero[i]! : nonzero[i]!;
      if (extreme(s)) hits++;
    }
    return { pValue: hits / patterns, test: "permutation-exact" };
  }
  let hits = 0;
  for (let r = 0; r < resamples; r++) {
    let s = 0;
    for (const x of nonzero) s += random() < 0.5 ? -x : x;
    if (extreme(s)) hits++;
  }
  return { pValue: (hits + 1) / (resamples + 1), test: "permutation" };
}

/** The 2.5th and 97.5th percentiles of the bootstrap distribution of the mean of `d`. */
function bootstrapInterval(
  d: readonly number[],
  resamples: number,
  random: () => number,
): [number, number] {
  const n = d.length;
  const means = new Float64Array(resamples);
  for (let r = 0; r < resamples; r++) {
    let s = 0;
    for (let i = 0; i < n; i++) s += d[Math.floor(random() * n)]!;
    means[r] = s / n;
  }
  means.sort();
  return [quantile(means, 0.025), quantile(means, 0.975)];
}

function quantile(sorted: Float64Array, q: number): number {
  const pos = (sorted.length - 1) * q;
  const lo = Math.floor(pos);
  const hi = Math.ceil(pos);
  return sorted[lo]! + (sorted[hi]! - sorted[lo]!) * (pos - lo);
}

/**
 * A small seeded PRNG (mulberry32): the same seed gives the same interval on every machine.
 *
 * @example mulberry32(1)() // 0.6270739405881613
 */
export function mulberry32(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function sumOf(values: readonly number[]): number {
  let s = 0;
  for (const v of values) s += v;
  return s;
}

function mean(values: readonly number[]): number {
  return sumOf(values) / values.length;
}
