/**
 * Paired comparison statistics of two runs' per-sample values (pure, deterministic): the mean
 * delta with a 95 % paired-bootstrap interval (fixed seed), and a p-value by exact McNemar for
 * 0/1 values or a paired sign-flip permutation test otherwise.
 */
import { binomial, multinomial } from "./binomial.js";

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
/** Distinct differences held as counts; past it, every difference is held (continuous scores). */
const MAX_DISTINCT = 1024;

/**
 * Compares paired values `a[i]`, `b[i]` (the same sample in runs A and B): `PairedAccumulator`
 * fed the pairs in order.
 *
 * @example comparePaired([1, 1, 1], [1, 0, 1]).delta // -1/3
 */
export function comparePaired(
  a: readonly number[],
  b: readonly number[],
  options: PairedOptions = {},
): PairedComparison {
  if (a.length !== b.length) throw new Error("comparePaired needs paired values");
  const pairs = new PairedAccumulator();
  for (let i = 0; i < a.length; i++) pairs.add(a[i]!, b[i]!);
  return pairs.finish(options);
}

/**
 * Paired values taken one pair at a time, for a comparison of runs too large to hold as arrays:
 * sums and counts, and the differences as counts of their distinct values (a few for scores
 * like 0/1 or a grade, however many pairs) until there are more than `MAX_DISTINCT` of them
 * (continuous scores), then every difference in a `Float64Array`. The bootstrap and the
 * permutation test resample the counts (a binomial per distinct value, `core/binomial.ts`) or,
 * past the bound, one difference per draw. The sums are added in the order of the pairs, so the
 * means are bit for bit those of the arrays.
 *
 * @example const p = new PairedAccumulator(); p.add(1, 0); p.finish().delta // -1
 */
export class PairedAccumulator {
  #n = 0;
  #sumA = 0;
  #sumB = 0;
  #sumD = 0;
  #improved = 0;
  #regressed = 0;
  #binary = true;
  #counts: Map<number, number> | undefined = new Map();
  #all = new Float64Array(0);
  #length = 0;
  readonly #maxDistinct: number;

  /** `maxDistinct`: how many distinct differences are held as counts (default `MAX_DISTINCT`). */
  constructor(options: { maxDistinct?: number } = {}) {
    this.#maxDistinct = options.maxDistinct ?? MAX_DISTINCT;
  }

  add(a: number, b: number): void {
    const d = b - a;
    this.#n++;
    this.#sumA += a;
    this.#sumB += b;
    this.#sumD += d;
    if (d > EPS) this.#improved++;
    else if (d < -EPS) this.#regressed++;
    if (this.#binary && !((a === 0 || a === 1) && (b === 0 || b === 1))) this.#binary = false;
    const counts = this.#counts;
    if (!counts) return this.#push(d);
    counts.set(d, (counts.get(d) ?? 0) + 1);
    if (counts.size > this.#maxDistinct) {
      this.#counts = undefined;
      const { values, counts: times } = sortedCounts(counts);
      values.forEach((value, i) => {
        for (let k = 0; k < times[i]!; k++) this.#push(value);
      });
    }
  }

  finish(options: PairedOptions = {}): PairedComparison {
    const n = this.#n;
    const improved = this.#improved;
    const regressed = this.#regressed;
    const counts = { improved, regressed, unchanged: n - improved - regressed };
    if (n === 0) {
      const test: PairedTest = "mcnemar-exact";
      return {
        n,
        ...{ meanA: null, meanB: null, delta: null, ciLow: null, ciHigh: null },
        pValue: 1,
        test,
        ...counts,
      };
    }
    const resamples = options.resamples ?? DEFAULT_RESAMPLES;
    const random = mulberry32(options.seed ?? DEFAULT_SEED);
    const held = this.#counts ? sortedCounts(this.#counts) : undefined;
    const d = this.#all.subarray(0, this.#length);
    const [ciLow, ciHigh] = held
      ? bootstrapCounts(held, n, resamples, random)
      : bootstrapInterval(d, resamples, random);
    const { pValue, test } = this.#binary
      ? { pValue: mcnemarExact(regressed, improved), test: "mcnemar-exact" as const }
      : held
        ? signFlipCounts(held, resamples, random)
        : signFlipTest(d, resamples, random);
    return {
      n,
      meanA: this.#sumA / n,
      meanB: this.#sumB / n,
      delta: this.#sumD / n,
      ciLow,
      ciHigh,
      pValue,
      test,
      ...counts,
    };
  }

  #push(d: number): void {
    if (this.#length === this.#all.length) {
      const grown = new Float64Array(Math.max(1024, this.#all.length * 2));
      grown.set(this.#all);
      this.#all = grown;
    }
    this.#all[this.#length++] = d;
  }
}

/** Distinct differences and how many pairs have each, by value. */
interface Counts {
  values: Float64Array;
  counts: Float64Array;
}

function sortedCounts(map: ReadonlyMap<number, number>): Counts {
  const entries = [...map].sort((x, y) => x[0] - y[0]);
  return {
    values: Float64Array.from(entries, (e) => e[0]),
    counts: Float64Array.from(entries, (e) => e[1]),
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
  d: ArrayLike<number>,
  resamples: number,
  random: () => number,
): { pValue: number; test: PairedTest } {
  const nonzero = Array.prototype.filter.call(d, (x: number) => Math.abs(x) > EPS) as number[];
  const observed = Math.abs(sumOf(nonzero));
  const m = nonzero.length;
  if (m <= EXACT_PERMUTATION_MAX) return exactSignFlip(nonzero, observed);
  const extreme = (s: number) => Math.abs(s) >= observed - 1e-9;
  let hits = 0;
  for (let r = 0; r < resamples; r++) {
    let s = 0;
    for (const x of nonzero) s += random() < 0.5 ? -x : x;
    if (extreme(s)) hits++;
  }
  return { pValue: (hits + 1) / (resamples + 1), test: "permutation" };
}

/** Every sign pattern of up to `EXACT_PERMUTATION_MAX` non-zero differences enumerated. */
function exactSignFlip(
  nonzero: readonly number[],
  observed: number,
): { pValue: number; test: PairedTest } {
  const m = nonzero.length;
  if (m === 0) return { pValue: 1, test: "permutation-exact" };
  let hits = 0;
  const patterns = 2 ** m;
  for (let mask = 0; mask < patterns; mask++) {
    let s = 0;
    for (let i = 0; i < m; i++) s += mask & (1 << i) ? -nonzero[i]! : nonzero[i]!;
    if (Math.abs(s) >= observed - 1e-9) hits++;
  }
  return { pValue: hits / patterns, test: "permutation-exact" };
}

/**
 * `signFlipTest` over differences held as counts of distinct values: the pairs of one value
 * flipped are a Binomial(count, ½) draw, so a resample costs a draw per distinct value.
 */
function signFlipCounts(
  held: Counts,
  resamples: number,
  random: () => number,
): { pValue: number; test: PairedTest } {
  const values: number[] = [];
  const counts: number[] = [];
  let m = 0;
  let sum = 0;
  held.values.forEach((v, i) => {
    if (Math.abs(v) <= EPS) return;
    values.push(v);
    counts.push(held.counts[i]!);
    m += held.counts[i]!;
    sum += v * held.counts[i]!;
  });
  const observed = Math.abs(sum);
  if (m <= EXACT_PERMUTATION_MAX)
    return exactSignFlip(
      values.flatMap((v, i) => Array.from({ length: counts[i]! }, () => v)),
      observed,
    );
  let hits = 0;
  for (let r = 0; r < resamples; r++) {
    let s = 0;
    for (let i = 0; i < values.length; i++)
      s += values[i]! * (counts[i]! - 2 * binomial(counts[i]!, 0.5, random));
    if (Math.abs(s) >= observed - 1e-9) hits++;
  }
  return { pValue: (hits + 1) / (resamples + 1), test: "permutation" };
}

/**
 * `bootstrapInterval` over differences held as counts of distinct values: a resample of n pairs
 * is a multinomial draw of how many of each value it takes.
 */
function bootstrapCounts(
  held: Counts,
  n: number,
  resamples: number,
  random: () => number,
): [number, number] {
  const means = new Float64Array(resamples);
  const drawn = new Float64Array(held.values.length);
  for (let r = 0; r < resamples; r++) {
    multinomial(n, held.counts, random, drawn);
    let s = 0;
    for (let i = 0; i < drawn.length; i++) s += held.values[i]! * drawn[i]!;
    means[r] = s / n;
  }
  means.sort();
  return [quantile(means, 0.025), quantile(means, 0.975)];
}

/** The 2.5th and 97.5th percentiles of the bootstrap distribution of the mean of `d`. */
function bootstrapInterval(
  d: ArrayLike<number>,
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
