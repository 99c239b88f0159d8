import { ExactSum } from "./exact-sum.js";
import type { Reducer, UsageFigures } from "./types.js";

export interface ScorerMetrics {
  scorer: string;
  /** Mean over samples of the epoch-reduced value; null when no sample was scored. */
  mean: number | null;
  /** Standard error of that mean (sample standard deviation / √n); 0 for one sample. */
  stderr: number | null;
  /** Samples with at least one scored epoch. */
  samples: number;
}

/**
 * Reduces the epochs of one sample to one value.
 *
 * @example reduceEpochs([1, 0, 1], "mean") // 0.666…
 * @example reduceEpochs([1, 0, 0], "pass@2") // 2/3: the chance that 2 draws contain a pass
 */
export function reduceEpochs(values: readonly number[], reducer: Reducer): number {
  if (values.length === 0) throw new Error("reduceEpochs needs at least one value");
  switch (reducer) {
    case "mean":
      return sum(values) / values.length;
    case "max":
      return Math.max(...values);
    case "min":
      return Math.min(...values);
    case "mode":
      return mode(values);
    default:
      return passAtK(values, Number(reducer.slice("pass@".length)));
  }
}

/**
 * What a set of attempts used and cost. An attempt that used tokens but carries no cost (no
 * price was known for its model) is `unpriced`: its cost is unknown, not zero. So `costUsd` is
 * what the priced attempts cost, a lower bound when `unpriced > 0`, and null when some attempts
 * are unpriced and the priced ones cost nothing: then nothing is known about the cost. Attempts
 * without usage (a function solver) cost nothing and are not unpriced.
 */
export interface UsageTotal {
  attempts: number;
  /** Every input token, cached and cache-written ones included. */
  inputTokens: number;
  /** Every output token, reasoning ones included. */
  outputTokens: number;
  /** Of the input tokens, those read from a prompt cache. */
  cachedInputTokens: number;
  /** Of the input tokens, those written to a prompt cache. */
  cacheWriteTokens: number;
  /** Of the output tokens, those spent reasoning. */
  reasoningTokens: number;
  /** US dollars; null when unknown (see above). */
  costUsd: number | null;
  /** Attempts that used tokens and have no cost. */
  unpriced: number;
}

/** A total of no attempts. */
export function emptyUsage(): UsageTotal {
  return {
    attempts: 0,
    inputTokens: 0,
    outputTokens: 0,
    cachedInputTokens: 0,
    cacheWriteTokens: 0,
    reasoningTokens: 0,
    costUsd: 0,
    unpriced: 0,
  };
}

/**
 * Adds one attempt (and its usage, when it has any) to `total`: all of it, its reused part
 * included (an attempt's usage is its whole trajectory). What an invocation bought is the usage's
 * `boughtUsage` (core/usage.ts).
 */
export function addUsage(total: UsageTotal, usage: UsageFigures | null): void {
  total.attempts++;
  if (usage === null) return;
  addScoringUsage(total, usage);
}

/**
 * The sum of several totals, added in the order given (so the same totals always give the same
 * figure). Unknown stays unknown only when no part of it is known.
 *
 * @example sumUsage(a, b).costUsd // null when both are unknown, a's cost when only b is
 */
export function sumUsage(...totals: readonly UsageTotal[]): UsageTotal {
  const sum = emptyUsage();
  for (const t of totals) {
    sum.attempts += t.attempts;
    sum.inputTokens += t.inputTokens;
    sum.outputTokens += t.outputTokens;
    sum.cachedInputTokens += t.cachedInputTokens;
    sum.cacheWriteTokens += t.cacheWriteTokens;
    sum.reasoningTokens += t.reasoningTokens;
    addCost(sum, t.costUsd ?? 0, t.unpriced);
  }
  return sum;
}

function addCost(total: UsageTotal, usd: number, unpriced: number): void {
  const known = (total.costUsd ?? 0) + usd;
  total.unpriced += unpriced;
  total.costUsd = total.unpriced > 0 && known === 0 ? null : known;
}

/**
 * Adds what a scoring of a stored attempt spent (a judge's tokens and cost): spend of the run,
 * but no attempt of its own.
 */
export function addScoringUsage(total: UsageTotal, usage: UsageFigures): void {
  total.inputTokens += usage.inputTokens;
  total.outputTokens += usage.outputTokens;
  total.cachedInputTokens += usage.cachedInputTokens ?? 0;
  total.cacheWriteTokens += usage.cacheWriteTokens ?? 0;
  total.reasoningTokens += usage.reasoningTokens ?? 0;
  const unpriced = usage.costUsd === undefined && usage.inputTokens + usage.outputTokens > 0;
  addCost(total, usage.costUsd ?? 0, unpriced ? 1 : 0);
}

/**
 * Mean and standard error (sample standard deviation / √n) of per-sample values, from their exact
 * sums (`metricsFromSums`), so the figure does not depend on the values' order.
 */
export function meanAndStderr(values: readonly number[]): {
  mean: number | null;
  stderr: number | null;
} {
  const sums = { n: 0, sum: new ExactSum(), squares: new ExactSum() };
  for (const v of values) {
    sums.n++;
    sums.sum.add(v);
    sums.squares.addSquare(v);
  }
  return metricsFromSums(sums);
}

/** What a mean and its standard error are computed from: a count and two exact sums. */
export interface MomentSums {
  n: number;
  /** Σ v, exact. */
  sum: ExactSum;
  /** Σ v², exact. */
  squares: ExactSum;
}

/**
 * Mean and standard error from exact sums: the mean is Σv (rounded once) / n; the variance's
 * Σ(v − mean)² is Σv² − 2·mean·Σv + n·mean², computed exactly and rounded once. Any set of values
 * gives the same figures however it was summed (all at once, or kept up to date sample by sample).
 *
 * @example metricsFromSums({ n: 2, sum: new ExactSum().add(1), squares: new ExactSum().add(1) }) // { mean: 0.5, stderr: 0.5 }
 */
export function metricsFromSums(sums: MomentSums): { mean: number | null; stderr: number | null } {
  const { n } = sums;
  if (n === 0) return { mean: null, stderr: null };
  const mean = sums.sum.toNumber() / n;
  if (n === 1) return { mean, stderr: 0 };
  const deviations = sums.squares
    .clone()
    .addScaled(sums.sum, -2 * mean)
    .addScaled(new ExactSum().addSquare(mean), n);
  const variance = deviations.toNumber() / (n - 1);
  return { mean, stderr: Math.sqrt(variance / n) };
}

function sum(values: readonly number[]): number {
  let total = 0;
  for (const v of values) total += v;
  return total;
}

/** The most frequent value; ties go to the larger value, so the result never depends on order. */
function mode(values: readonly number[]): number {
  const counts = new Map<number, number>();
  for (const v of values) counts.set(v, (counts.get(v) ?? 0) + 1);
  let best = -Infinity;
  let bestCount = 0;
  for (const [value, count] of counts) {
    if (count > bestCount || (count === bestCount && value > best)) {
      best = value;
      bestCount = count;
    }
  }
  return best;
}

/**
 * The unbiased pass@k estimator (Chen et al., 2021): 1 − C(n−c, k) / C(n, k), where c counts
 * the epochs scored 1. With fewer than k scored epochs it uses k = n.
 */
function passAtK(values: readonly number[], k: number): number {
  const n = values.length;
  const c = values.filter((v) => v >= 1).length;
  const kk = Math.min(k, n);
  if (n - c < kk) return 1;
  let failAll = 1;
  for (let i = n - c + 1; i <= n; i++) failAll *= 1 - kk / i;
  return 1 - failAll;
}
