import { meanAndStderr, reduceEpochs, type ScorerMetrics, type UsageTotal } from "./aggregate.js";
import { compareKeys } from "./keys.js";
import type {
  AttemptErrorType,
  AttemptStatus,
  Key,
  Provenance,
  Reducer,
  Score,
  Usage,
} from "./types.js";

/** What the fold reads of a stored attempt. */
export interface FoldedAttempt extends Key {
  attempt: number;
  status: AttemptStatus;
  fingerprint: string;
  scores: readonly Score[];
  usage: Usage | null;
  error: { type: AttemptErrorType } | null;
  provenance: Provenance;
}

export interface FoldResult {
  scored: number;
  errored: number;
  errorsByType: Partial<Record<AttemptErrorType, number>>;
  metrics: ScorerMetrics[];
  spentNow: UsageTotal;
  totalSpent: UsageTotal;
  reused: UsageTotal;
  executedNow: number;
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
  #last: A | undefined;
  #held: A | undefined;
  #sampleId: string | undefined;
  #epochValues: number[][];
  readonly #perSample: number[][];
  readonly #result: FoldResult;

  constructor(options: {
    /** The sample's current fingerprint; attempts for another one are history. */
    fingerprintOf: (sampleId: string) => string | undefined;
    scorers: readonly string[];
    reducer: Reducer;
    isNow: (attempt: A) => boolean;
  }) {
    this.#fingerprintOf = options.fingerprintOf;
    this.#scorers = options.scorers;
    this.#reducer = options.reducer;
    this.#isNow = options.isNow;
    this.#epochValues = options.scorers.map(() => []);
    this.#perSample = options.scorers.map(() => []);
    this.#result = {
      scored: 0,
      errored: 0,
      errorsByType: {},
      metrics: [],
      spentNow: emptyUsage(),
      totalSpent: emptyUsage(),
      reused: emptyUsage(),
      executedNow: 0,
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
    if (executed) addUsage(this.#result.totalSpent, attempt.usage);
    if (now) {
      this.#result.executedNow++;
      if (executed) addUsage(this.#result.spentNow, attempt.usage);
    }
    if (this.#fingerprintOf(attempt.sampleId) !== attempt.fingerprint) return;
    const held = this.#held;
    if (held && compareKeys(held, attempt) === 0) {
      if (rank(attempt) > rank(held)) this.#held = attempt;
      return;
    }
    if (held) this.#closeKey(held);
    this.#held = attempt;
  }

  finish(): FoldResult {
    if (this.#held) this.#closeKey(this.#held);
    this.#held = undefined;
    this.#closeSample();
    this.#result.metrics = this.#scorers.map((scorer, i) => ({
      scorer,
      ...meanAndStderr(this.#perSample[i]!),
      samples: this.#perSample[i]!.length,
    }));
    return this.#result;
  }

  #closeKey(outcome: A): void {
    const r = this.#result;
    if (!this.#isNow(outcome)) addUsage(r.reused, outcome.usage);
    if (outcome.status !== "scored") {
      r.errored++;
      if (outcome.error)
        r.errorsByType[outcome.error.type] = (r.errorsByType[outcome.error.type] ?? 0) + 1;
      return;
    }
    r.scored++;
    if (outcome.sampleId !== this.#sampleId) {
      this.#closeSample();
      this.#sampleId = outcome.sampleId;
    }
    this.#scorers.forEach((scorer, i) => {
      const score = outcome.scores.find((s) => s.scorer === scorer);
      if (score && score.value !== null) this.#epochValues[i]!.push(score.value);
    });
  }

  #closeSample(): void {
    this.#epochValues.forEach((values, i) => {
      if (values.length > 0) this.#perSample[i]!.push(reduceEpochs(values, this.#reducer));
    });
    this.#epochValues = this.#scorers.map(() => []);
  }
}

function rank(a: { status: AttemptStatus; attempt: number }): number {
  return (a.status === "scored" ? 1e9 : 0) + a.attempt;
}

function emptyUsage(): UsageTotal {
  return { attempts: 0, inputTokens: 0, outputTokens: 0, costUsd: 0 };
}

function addUsage(total: UsageTotal, usage: Usage | null): void {
  total.attempts++;
  total.inputTokens += usage?.inputTokens ?? 0;
  total.outputTokens += usage?.outputTokens ?? 0;
  total.costUsd += usage?.costUsd ?? 0;
}
