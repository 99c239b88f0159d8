import {
  emptyUsage,
  meanAndStderr,
  reduceEpochs,
  type ScorerMetrics,
  type UsageTotal,
} from "./aggregate.js";
import { UsageSum } from "./usage-sum.js";
import { compareKeys } from "./keys.js";
import { boughtUsage } from "./usage.js";
import { scoresStand } from "./outcomes.js";
import { scoreHistogram, type ScoreDistribution } from "./score-chart.js";
import type { AttemptLimit, LimitName } from "./limits.js";
import type {
  AttemptErrorType,
  AttemptStatus,
  Key,
  Provenance,
  Reducer,
  Score,
  Usage,
  UsageFigures,
} from "./types.js";

/** What the fold reads of a stored attempt. */
export interface FoldedAttempt extends Key {
  attempt: number;
  status: AttemptStatus;
  fingerprint: string;
  scores: readonly Score[];
  usage: Usage | null;
  error: { type: AttemptErrorType; message: string } | null;
  provenance: Provenance;
  /** Model requests it re-sent after retryable failures; absent when unknown (an old row). */
  retries?: number;
  /** The per-sample limit that ended it, if one did. */
  limit?: AttemptLimit;
}

/**
 * A run's retries, from its stored rows: every attempt, not only outcomes, as its spend is.
 * `total` sums the re-sent model requests of its executed attempts (imported ones were made
 * elsewhere; a report adds its scorings'); `keysRetried` counts the keys that have an attempt
 * numbered above 1 (they needed another attempt); `unrecorded` counts executed attempts stored
 * before stet counted retries, whose retries are unknown and left out of `total`.
 */
export interface RetryTotals {
  total: number;
  keysRetried: number;
  unrecorded: number;
}

/** How many errored outcomes a report quotes per error type. */
export const ERROR_EXAMPLES = 3;
/** The longest error message a report quotes; the rest is cut with "…". */
export const ERROR_MESSAGE_MAX = 200;

/** One errored outcome quoted in a report: its key and the first line of its message. */
export interface ErrorExample extends Key {
  message: string;
}

/**
 * The errored outcomes of one error type: how many, and the first few in key order (lowest
 * sample id, then epoch), so the same store always quotes the same ones.
 */
export interface ErrorGroup {
  type: AttemptErrorType;
  count: number;
  examples: ErrorExample[];
}

export interface FoldResult {
  scored: number;
  errored: number;
  /** Of `scored`, the outcomes a per-sample limit ended (scored on their output so far). */
  limited: number;
  /** The same, by the limit that ended them. */
  limitedBy: Partial<Record<LimitName, number>>;
  errorsByType: Partial<Record<AttemptErrorType, number>>;
  /** The same counts with examples, most frequent type first (ties by type name). */
  errors: ErrorGroup[];
  metrics: ScorerMetrics[];
  /** Per scorer, how many samples' reduced values fall in each tenth of [0, 1] (the chart's bins). */
  distribution: ScoreDistribution[];
  spentNow: UsageTotal;
  totalSpent: UsageTotal;
  reused: UsageTotal;
  /** A distributed run's outcomes that other workers committed meanwhile (see `isOthers`). */
  byOthers: UsageTotal;
  executedNow: number;
  retries: RetryTotals;
}

/**
 * A run's figures folded over its attempts in key order (sample id, epoch, attempt), one at a
 * time, so a report never holds every attempt of a large run. It adds in the same order as
 * sorting the whole set would, so its figures are bit-identical to `aggregate`/`totalUsage`
 * over the selected outcomes.
 *
 * @example
 * const fold = new OutcomeFold({ fingerprintOf, scorers: ["exact"], reducer: "mean", isNow });
 * for (const a of heads) fold.add(a);
 * fold.finish().metrics;
 */
export class OutcomeFold<A extends FoldedAttempt = FoldedAttempt> {
  readonly #fingerprintOf: (sampleId: string) => string | undefined;
  readonly #scorers: readonly string[];
  readonly #reducer: Reducer;
  readonly #isNow: (attempt: A) => boolean;
  readonly #reusedImportedOnly: boolean;
  readonly #isOthers: (attempt: A) => boolean;
  readonly #onSample: ((sampleId: string, values: readonly (number | null)[]) => void) | undefined;
  #last: A | undefined;
  #held: A | undefined;
  #retriedKey: A | undefined;
  #sampleId: string | undefined;
  #epochValues: number[][];
  readonly #perSample: number[][];
  readonly #result: FoldResult;
  // Spend is summed exactly (order-independent) and rounded once, in `finish`.
  readonly #spend = {
    spentNow: new UsageSum(),
    totalSpent: new UsageSum(),
    reused: new UsageSum(),
    byOthers: new UsageSum(),
  };
  readonly #examples = new Map<AttemptErrorType, ErrorExample[]>();

  constructor(options: {
    /** The sample's current fingerprint; attempts for another one are history. */
    fingerprintOf: (sampleId: string) => string | undefined;
    scorers: readonly string[];
    reducer: Reducer;
    isNow: (attempt: A) => boolean;
    /**
     * For a worker of a distributed run: an outcome another worker committed while this one
     * worked (neither this invocation's nor there before it): counted in `byOthers`, not as reused.
     */
    isOthers?: (attempt: A) => boolean;
    /**
     * What `reused` counts: `preserved` (default), the outcomes an invocation that had work to do
     * found stored and did not buy again, imported ones included, and the calls its attempts
     * replayed from the journal (their `usage.reused`; no attempt of their own); `imported`, only outcomes
     * brought in from elsewhere (an import, `--resume-from`), for a view with no invocation
     * behind it (`stet show`, a report) or one that had nothing to do: the run's own spend is
     * its spend there, never "reused".
     */
    reused?: "preserved" | "imported";
    /**
     * Told each sample's epoch-reduced value per scorer (in `scorers` order; null: no scored
     * value), as the sample closes: what a paired comparison of two runs reads.
     */
    onSample?: (sampleId: string, values: readonly (number | null)[]) => void;
  }) {
    this.#fingerprintOf = options.fingerprintOf;
    this.#scorers = options.scorers;
    this.#reducer = options.reducer;
    this.#isNow = options.isNow;
    this.#isOthers = options.isOthers ?? (() => false);
    this.#reusedImportedOnly = options.reused === "imported";
    this.#onSample = options.onSample;
    this.#epochValues = options.scorers.map(() => []);
    this.#perSample = options.scorers.map(() => []);
    this.#result = {
      scored: 0,
      errored: 0,
      limited: 0,
      limitedBy: {},
      errorsByType: {},
      errors: [],
      metrics: [],
      distribution: [],
      spentNow: emptyUsage(),
      totalSpent: emptyUsage(),
      reused: emptyUsage(),
      byOthers: emptyUsage(),
      executedNow: 0,
      retries: { total: 0, keysRetried: 0, unrecorded: 0 },
    };
  }

  /** Adds the next attempt; attempts must come in key order, a key's attempts together. */
  add(attempt: A): void {
    if (this.#last && compareKeys(this.#last, attempt) > 0) {
      throw new Error("OutcomeFold needs attempts in key order");
    }
    this.#last = attempt;
    const now = this.#isNow(attempt);
    const executed = attempt.provenance.kind === "executed";
    const spend = this.#spend;
    if (executed) spend.totalSpent.add(attempt.usage);
    if (now) {
      this.#result.executedNow++;
      // Its calls replayed from the journal were bought by an earlier invocation, not now: they
      // are reused (not re-bought), as the outcomes it found stored are.
      if (executed) spend.spentNow.add(attempt.usage && boughtUsage(attempt.usage));
      const replayed = attempt.usage?.reused;
      if (executed && replayed && !this.#reusedImportedOnly) {
        spend.reused.addScoring(replayed);
      }
    }
    this.#countRetries(attempt, executed);
    if (this.#fingerprintOf(attempt.sampleId) !== attempt.fingerprint) return;
    const held = this.#held;
    if (held && compareKeys(held, attempt) === 0) {
      if (rank(attempt) > rank(held)) this.#held = attempt;
      return;
    }
    if (held) this.#closeKey(held);
    this.#held = attempt;
  }

  /**
   * Adds a stored scoring's spend (a judge's): the run's total, and spent now when made now; its
   * judges' retries are the run's. Scorings may come in any order, before `finish`.
   */
  addScoring(
    scoring: { usage?: UsageFigures | null; retries?: number | null },
    now: boolean,
  ): void {
    this.#result.retries.total += scoring.retries ?? 0;
    if (!scoring.usage) return;
    this.#spend.totalSpent.addScoring(scoring.usage);
    if (now) this.#spend.spentNow.addScoring(scoring.usage);
  }

  /**
   * Spend made now that the caller summed itself (an invocation's scorings, `UsageSum`): added
   * to spent now only, the rows themselves being added to the total by `addScoring`.
   */
  addSpentNow(sum: UsageSum): void {
    this.#spend.spentNow.addSum(sum);
  }

  finish(): FoldResult {
    if (this.#held) this.#closeKey(this.#held);
    this.#held = undefined;
    this.#closeSample();
    for (const name of ["spentNow", "totalSpent", "reused", "byOthers"] as const) {
      this.#result[name] = this.#spend[name].total();
    }
    this.#result.errors = errorGroups(this.#result.errorsByType, (type) =>
      this.#examples.get(type),
    );
    this.#result.metrics = this.#scorers.map((scorer, i) => ({
      scorer,
      ...meanAndStderr(this.#perSample[i]!),
      samples: this.#perSample[i]!.length,
    }));
    this.#result.distribution = this.#scorers.map((scorer, i) => ({
      scorer,
      counts: scoreHistogram(this.#perSample[i]!),
    }));
    return this.#result;
  }

  #closeKey(outcome: A): void {
    const r = this.#result;
    if (this.#isOthers(outcome)) this.#spend.byOthers.add(outcome.usage);
    else if (
      !this.#isNow(outcome) &&
      (!this.#reusedImportedOnly || outcome.provenance.kind === "imported")
    )
      this.#spend.reused.add(outcome.usage);
    if (outcome.status === "scored") {
      r.scored++;
      if (outcome.limit) {
        r.limited++;
        r.limitedBy[outcome.limit.limit] = (r.limitedBy[outcome.limit.limit] ?? 0) + 1;
      }
    } else {
      r.errored++;
      if (outcome.error) this.#countError(outcome, outcome.error);
      // A scorer error's scores stand but for the thrown ones (null, left out of their metric).
      if (!scoresStand(outcome)) return;
    }
    if (outcome.sampleId !== this.#sampleId) {
      this.#closeSample();
      this.#sampleId = outcome.sampleId;
    }
    this.#scorers.forEach((scorer, i) => {
      const score = outcome.scores.find((s) => s.scorer === scorer);
      if (score && score.value !== null) this.#epochValues[i]!.push(score.value);
    });
  }

  /** Every attempt, of any fingerprint: what the run went through, as its total spend is. */
  #countRetries(attempt: A, executed: boolean): void {
    const retries = this.#result.retries;
    if (executed) {
      if (attempt.retries === undefined) retries.unrecorded++;
      else retries.total += attempt.retries;
    }
    // A key's attempts come together: its first one numbered above 1 counts it, once.
    const counted = this.#retriedKey;
    if (attempt.attempt > 1 && !(counted && compareKeys(counted, attempt) === 0)) {
      retries.keysRetried++;
      this.#retriedKey = attempt;
    }
  }

  // Keys close in key order, so the first examples kept are the lowest keys.
  #countError(key: Key, error: { type: AttemptErrorType; message: string }): void {
    const r = this.#result;
    r.errorsByType[error.type] = (r.errorsByType[error.type] ?? 0) + 1;
    let examples = this.#examples.get(error.type);
    if (!examples) this.#examples.set(error.type, (examples = []));
    if (examples.length < ERROR_EXAMPLES) {
      examples.push({
        sampleId: key.sampleId,
        epoch: key.epoch,
        message: quoteMessage(error.message),
      });
    }
  }

  #closeSample(): void {
    const reduced = this.#epochValues.map((values, i) => {
      if (values.length === 0) return null;
      const value = reduceEpochs(values, this.#reducer);
      this.#perSample[i]!.push(value);
      return value;
    });
    if (this.#sampleId !== undefined && this.#onSample) this.#onSample(this.#sampleId, reduced);
    this.#epochValues = this.#scorers.map(() => []);
  }
}

/**
 * The errored outcomes' groups as a report lists them: each type's count and examples, most
 * frequent type first (ties by type name).
 *
 * @example errorGroups({ timeout: 2 }, () => []) // [{ type: "timeout", count: 2, examples: [] }]
 */
export function errorGroups(
  counts: Partial<Record<AttemptErrorType, number>>,
  examplesOf: (type: AttemptErrorType) => ErrorExample[] | undefined,
): ErrorGroup[] {
  return Object.entries(counts)
    .map(([type, count]) => ({
      type: type as AttemptErrorType,
      count,
      examples: examplesOf(type as AttemptErrorType) ?? [],
    }))
    .sort((a, b) => b.count - a.count || (a.type < b.type ? -1 : a.type > b.type ? 1 : 0));
}

/**
 * The first line of an error message, cut to `ERROR_MESSAGE_MAX` characters: a report quotes
 * what went wrong, never a stack or a whole command's output.
 *
 * @example quoteMessage("tool failed\n    at solve (eval.mjs:3:9)") // "tool failed"
 */
export function quoteMessage(message: string): string {
  const line = message.trim().split(/\r?\n/, 1)[0]!.trim();
  return line.length > ERROR_MESSAGE_MAX ? `${line.slice(0, ERROR_MESSAGE_MAX - 1)}…` : line;
}

function rank(a: { status: AttemptStatus; attempt: number }): number {
  return (a.status === "scored" ? 1e9 : 0) + a.attempt;
}
