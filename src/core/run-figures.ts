import { reduceEpochs, metricsFromSums } from "./aggregate.js";
import { ExactSum } from "./exact-sum.js";
import type { LimitName } from "./limits.js";
import {
  errorGroups,
  quoteMessage,
  type ErrorExample,
  type FoldedAttempt,
  type FoldResult,
} from "./outcome-fold.js";
import { scoresStand } from "./outcomes.js";
import { CHART_BINS } from "./score-chart.js";
import type { AttemptErrorType, AttemptStatus, Reducer, Score, UsageFigures } from "./types.js";
import { UsageSum } from "./usage-sum.js";

/**
 * What a run's figures need of one key's current outcome (its best attempt for the sample's
 * current fingerprint, as `OutcomeFold` picks it): small enough to keep per sample in the store.
 */
export interface KeyFigures {
  attempt: number;
  status: AttemptStatus;
  /** The error's type and quoted message (`quoteMessage`), when the outcome is an error. */
  error?: { type: AttemptErrorType; message: string };
  limit?: LimitName;
  /** The usage of an imported outcome (reused, not bought here); absent otherwise. */
  imported?: { usage: UsageFigures | null };
  /** The scores that count (the outcome's scores stand, `scoresStand`): scorer and value. */
  values?: [scorer: string, value: number][];
}

/** One sample's keys' outcomes by epoch: what the store keeps per sample. */
export type SampleFigures = Record<string, KeyFigures>;

/** A key's figures from its outcome attempt. */
export function keyFigures(outcome: FoldedAttempt): KeyFigures {
  const figures: KeyFigures = { attempt: outcome.attempt, status: outcome.status };
  if (outcome.status !== "scored" && outcome.error) {
    figures.error = { type: outcome.error.type, message: quoteMessage(outcome.error.message) };
  }
  if (outcome.limit) figures.limit = outcome.limit.limit;
  if (outcome.provenance.kind === "imported") figures.imported = { usage: outcome.usage };
  if (scoresStand(outcome)) figures.values = countingScores(outcome.scores);
  return figures;
}

/**
 * The scores of an outcome that count, as scorer and value: each scorer's first (the one a fold
 * reads, `scores.find`), where it has a value. What `--rerun-failed` compares with 1.
 */
export function countingScores(scores: readonly Score[]): [scorer: string, value: number][] {
  const values = new Map<string, number | null>();
  for (const s of scores) if (!values.has(s.scorer)) values.set(s.scorer, s.value);
  return [...values].filter((e): e is [string, number] => e[1] !== null);
}

/**
 * A sample's figures once `attempt` is stored, from its figures before: the attempt becomes its
 * key's outcome when it is for the sample's current fingerprint and outranks the key's outcome.
 * Exact for an attempt as it is committed (no scoring of it yet); a scoring or a changed
 * fingerprint needs `sampleFiguresOf` over the sample's attempts.
 *
 * @example withAttempt(undefined, attempt, attempt.fingerprint)[attempt.epoch]?.status
 */
export function withAttempt(
  sample: SampleFigures | undefined,
  attempt: FoldedAttempt,
  fingerprint: string,
): SampleFigures {
  const before = sample ?? {};
  if (attempt.fingerprint !== fingerprint || !outranks(attempt, before[attempt.epoch])) {
    return before;
  }
  return { ...before, [attempt.epoch]: keyFigures(attempt) };
}

/**
 * Whether `candidate` takes over from `held` as a key's outcome: a scored attempt beats an
 * error, then the higher number wins (`OutcomeFold`'s rank).
 */
export function outranks(
  candidate: { status: AttemptStatus; attempt: number },
  held?: { status: AttemptStatus; attempt: number },
): boolean {
  if (!held) return true;
  if ((candidate.status === "scored") !== (held.status === "scored"))
    return candidate.status === "scored";
  return candidate.attempt > held.attempt;
}

/**
 * A sample's figures from its attempts (any order, any fingerprint): each key's outcome among the
 * attempts for `fingerprint`.
 */
export function sampleFiguresOf(
  attempts: Iterable<FoldedAttempt>,
  fingerprint: string,
): SampleFigures {
  const best = new Map<number, FoldedAttempt>();
  for (const a of attempts) {
    if (a.fingerprint !== fingerprint) continue;
    if (outranks(a, best.get(a.epoch))) best.set(a.epoch, a);
  }
  const out: SampleFigures = {};
  for (const [epoch, a] of [...best].sort((p, q) => p[0] - q[0])) out[epoch] = keyFigures(a);
  return out;
}

interface ScorerSums {
  n: number;
  sum: ExactSum;
  squares: ExactSum;
  bins: number[];
}

/**
 * A run's figures as sums over its samples and its stored rows, kept up to date one commit at a
 * time: a sample's contribution is added when it first has an outcome and swapped (taken away,
 * the new one added) when its outcomes change; attempts and scorings add their spend as they are
 * stored. Every sum is exact (`ExactSum`, `UsageSum`), so the figures equal an `OutcomeFold` of
 * every stored attempt bit for bit, whatever order the commits came in.
 *
 * @example const run = new RunFigures("mean"); run.addSample(after, 1).addSample(before, -1);
 */
export class RunFigures {
  readonly reducer: Reducer;
  scored = 0;
  errored = 0;
  limited = 0;
  limitedBy: Partial<Record<LimitName, number>> = {};
  errorsByType: Partial<Record<AttemptErrorType, number>> = {};
  /** Imported outcomes' usage (what a stored report calls reused). */
  reused = new UsageSum();
  /** Every executed attempt's usage and every scoring's. */
  spent = new UsageSum();
  retries = { total: 0, keysRetried: 0, unrecorded: 0 };
  readonly scorers = new Map<string, ScorerSums>();

  constructor(reducer: Reducer) {
    this.reducer = reducer;
  }

  /** A sample's outcomes added (sign 1) or taken away (sign -1). */
  addSample(sample: SampleFigures, sign: 1 | -1): this {
    const epochs = Object.keys(sample)
      .map(Number)
      .sort((a, b) => a - b);
    const perScorer = new Map<string, number[]>();
    for (const epoch of epochs) {
      const key = sample[epoch]!;
      if (key.imported) this.reused.add(key.imported.usage, sign);
      if (key.status === "scored") {
        this.scored += sign;
        if (key.limit) {
          this.limited += sign;
          bump(this.limitedBy, key.limit, sign);
        }
      } else {
        this.errored += sign;
        if (key.error) bump(this.errorsByType, key.error.type, sign);
      }
      for (const [scorer, value] of key.values ?? []) {
        const list = perScorer.get(scorer);
        if (list) list.push(value);
        else perScorer.set(scorer, [value]);
      }
    }
    for (const [scorer, values] of perScorer) {
      const value = reduceEpochs(values, this.reducer);
      let sums = this.scorers.get(scorer);
      if (!sums) this.scorers.set(scorer, (sums = emptySums()));
      sums.n += sign;
      sums.sum.add(sign * value);
      sums.squares.addSquare(value, sign);
      const bin = Math.min(CHART_BINS - 1, Math.max(0, Math.floor(value * CHART_BINS)));
      sums.bins[bin] = sums.bins[bin]! + sign;
      if (sums.n === 0) this.scorers.delete(scorer);
    }
    return this;
  }

  /** A stored attempt's spend and retries (every attempt, whatever its fingerprint). */
  addAttempt(attempt: Pick<FoldedAttempt, "attempt" | "usage" | "provenance" | "retries">): this {
    if (attempt.attempt === 2) this.retries.keysRetried++;
    if (attempt.provenance.kind !== "executed") return this;
    this.spent.add(attempt.usage);
    if (attempt.retries === undefined) this.retries.unrecorded++;
    else this.retries.total += attempt.retries;
    return this;
  }

  /** A stored scoring's spend and its judges' retries. */
  addScoring(scoring: { usage?: UsageFigures | null; retries?: number | null }): this {
    this.retries.total += scoring.retries ?? 0;
    if (scoring.usage) this.spent.addScoring(scoring.usage);
    return this;
  }

  /**
   * The figures a stored report shows (no invocation behind it: nothing spent now, reused is the
   * imported outcomes), for the run's scorers in order; `errors` left for the caller to quote.
   */
  figures(scorers: readonly string[]): Omit<FoldResult, "errors"> {
    const empty = new UsageSum().total();
    return {
      scored: this.scored,
      errored: this.errored,
      limited: this.limited,
      limitedBy: { ...this.limitedBy },
      errorsByType: { ...this.errorsByType },
      metrics: scorers.map((scorer) => {
        const sums = this.scorers.get(scorer) ?? emptySums();
        return { scorer, ...metricsFromSums(sums), samples: sums.n };
      }),
      distribution: scorers.map((scorer) => ({
        scorer,
        counts: [...(this.scorers.get(scorer) ?? emptySums()).bins],
      })),
      spentNow: empty,
      totalSpent: this.spent.total(),
      reused: this.reused.total(),
      byOthers: empty,
      executedNow: 0,
      retries: { ...this.retries },
    };
  }

  /**
   * The whole of a stored report's figures: `figures` with the errors quoted from `examples`
   * (each type's first few errored keys in key order, as the store reads them).
   */
  report(scorers: readonly string[], examples: ErrorExamples): FoldResult {
    return {
      ...this.figures(scorers),
      errors: errorGroups(this.errorsByType, (type) => examples[type]),
    };
  }

  /** The exact text form the store keeps (`parse` reads it back). */
  toJSON(): RunFiguresJson {
    return {
      reducer: this.reducer,
      scored: this.scored,
      errored: this.errored,
      limited: this.limited,
      limitedBy: this.limitedBy,
      errorsByType: this.errorsByType,
      reused: usageJson(this.reused),
      spent: usageJson(this.spent),
      retries: this.retries,
      scorers: [...this.scorers].map(([name, s]) => ({
        name,
        n: s.n,
        sum: s.sum.toString(),
        squares: s.squares.toString(),
        bins: s.bins,
      })),
    };
  }

  static parse(json: RunFiguresJson): RunFigures {
    const run = new RunFigures(json.reducer);
    Object.assign(run, {
      scored: json.scored,
      errored: json.errored,
      limited: json.limited,
      limitedBy: { ...json.limitedBy },
      errorsByType: { ...json.errorsByType },
      reused: parseUsage(json.reused),
      spent: parseUsage(json.spent),
      retries: { ...json.retries },
    });
    for (const s of json.scorers) {
      run.scorers.set(s.name, {
        n: s.n,
        sum: ExactSum.parse(s.sum),
        squares: ExactSum.parse(s.squares),
        bins: [...s.bins],
      });
    }
    return run;
  }
}

/** The error examples a report quotes, by type: the first few errored keys in key order. */
export type ErrorExamples = Partial<Record<AttemptErrorType, ErrorExample[]>>;

/** `RunFigures` as JSON: every exact sum in `ExactSum`'s text form. */
export interface RunFiguresJson {
  reducer: Reducer;
  scored: number;
  errored: number;
  limited: number;
  limitedBy: Partial<Record<LimitName, number>>;
  errorsByType: Partial<Record<AttemptErrorType, number>>;
  reused: UsageJson;
  spent: UsageJson;
  retries: { total: number; keysRetried: number; unrecorded: number };
  scorers: { name: string; n: number; sum: string; squares: string; bins: number[] }[];
}

type UsageJson = Omit<UsageSum, "cost" | "add" | "addScoring" | "addSum" | "total"> & {
  cost: string;
};

function usageJson(u: UsageSum): UsageJson {
  const { cost, ...rest } = u;
  return { ...rest, cost: cost.toString() };
}

function parseUsage(json: UsageJson): UsageSum {
  const u = new UsageSum();
  const { cost, ...rest } = json;
  Object.assign(u, rest);
  u.cost = ExactSum.parse(cost);
  return u;
}

function emptySums(): ScorerSums {
  return {
    n: 0,
    sum: new ExactSum(),
    squares: new ExactSum(),
    bins: new Array<number>(CHART_BINS).fill(0),
  };
}

/** A count moved by one; a count back at zero is no longer listed (as a fold never lists it). */
function bump<K extends string>(counts: Partial<Record<K, number>>, key: K, sign: 1 | -1): void {
  const next = (counts[key] ?? 0) + sign;
  if (next === 0) delete counts[key];
  else counts[key] = next;
}
