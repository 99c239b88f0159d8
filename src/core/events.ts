import type { Agreement } from "./agreement.js";
import type { ScorerMetrics, UsageTotal } from "./aggregate.js";
import type { ScoreDistribution } from "./score-chart.js";
import type { ErrorGroup, RetryTotals } from "./outcome-fold.js";
import type { Plan } from "./plan.js";
import type { LimitName } from "./limits.js";
import type { ReuseSummary } from "./reuse-plan.js";
import type { RateWaits } from "./rate-limits.js";
import type { Attempt, AttemptErrorType, Key, RunStatus, Scoring } from "./types.js";

/** A plan without its key and sample lists: what events and reports carry. */
export type PlanSummary = Omit<
  Plan,
  "toExecute" | "toRescore" | "samples" | "rerunAfter" | "replayFrom"
> & {
  toExecute: number;
  /** Scorer errors whose stored outputs are scored again (no solver call). */
  toRescore: number;
};

export interface Progress {
  total: number;
  /** Keys with a scored outcome, preserved ones included. */
  done: number;
  /** Keys whose current outcome is an error. */
  errored: number;
  /** Attempts committed by this invocation. */
  executed: number;
  inflight: number;
  /**
   * What this invocation's attempts cost, as `UsageTotal.costUsd`: a lower bound when
   * `unpricedNow > 0`, null when unknown (only unpriced attempts so far).
   */
  spentNowUsd: number | null;
  /** This invocation's attempts that used tokens without a known price. */
  unpricedNow: number;
  elapsedMs: number;
  /**
   * A distributed run's worker: keys the run's other workers gave an outcome since this one
   * joined, as last seen (at its latest claim), so its progress and rate are the run's.
   */
  others?: number;
  /**
   * Requests waiting on a rate limit now (their endpoint's budget, a pause after a 429, the
   * in-flight cap), and for how long some have been waiting without a break, ms. Absent: none.
   */
  rateLimited?: { waiting: number; forMs: number };
}

export interface RunReport {
  runId: string;
  evalName: string;
  status: RunStatus;
  resumed: boolean;
  plan: PlanSummary;
  /** `limited`: of the scored keys, those a per-sample limit ended (scored on their output so far). */
  counts: { total: number; scored: number; errored: number; remaining: number; limited: number };
  /** The limited keys by the limit that ended them; absent when none was. */
  limitedBy?: Partial<Record<LimitName, number>>;
  /** The run's scorers, then its human scorers (reviews: `human`, `human:<rubric>`), if any. */
  metrics: ScorerMetrics[];
  /**
   * Each human scorer against each of the run's scorers on the keys both scored: agreement rate,
   * Cohen's κ with its interval, the confusion matrix. Absent when nobody reviewed the run.
   */
  agreement?: Agreement[];
  /** Per scorer, the samples' reduced values counted in tenths of [0, 1] (the score chart). */
  distribution: ScoreDistribution[];
  errorsByType: Partial<Record<AttemptErrorType, number>>;
  /** The errored outcomes by type, most frequent first, each with its first few keys quoted. */
  errors: ErrorGroup[];
  /**
   * Per endpoint the run's model calls went to: requests sent, those that waited on a rate
   * limit, 429/529 answers, and the time requests spent waiting (ms, summed over requests); what
   * every process of the run recorded. Absent when none recorded any.
   */
  rateLimits?: RateWaits[];
  usage: {
    /** Attempts executed by this invocation. */
    spentNow: UsageTotal;
    /** Every attempt ever executed for the run (imported ones excluded). */
    totalSpent: UsageTotal;
    /**
     * What this invocation did not pay for: outcomes preserved from earlier invocations or
     * imported, and the model calls its attempts replayed from the journal (`attempts` counts
     * the outcomes only). Spent now plus reused is what its outcomes cost. In a stored report (`stored`), and for an invocation that had nothing to do, only imported
     * outcomes (paid elsewhere): the run's own spend is never "reused" from where nothing ran.
     */
    reused: UsageTotal;
    /** A distributed run's worker: outcomes the other workers bought meanwhile (not reused). */
    byOtherWorkers?: UsageTotal;
  };
  /** Read from the store with no invocation behind it (`stet show`, the API, exports). */
  stored?: true;
  /** The run was started with `--reuse`: what it reused, from where, and why not the rest. */
  reuse?: ReuseSummary;
  /**
   * Model requests re-sent after retryable failures (429, 5xx, a dropped connection, a timeout),
   * from the stored rows: `total` over every executed attempt of the run and every scoring,
   * `keysRetried` the keys that needed more than one attempt, `unrecorded` the executed attempts
   * stored before stet counted retries (see RetryTotals).
   */
  retries: RetryTotals;
  executed: number;
  /** Stored attempts this invocation scored again (a rescore, a resume's scorer errors). */
  rescored: number;
  preserved: number;
  wallMs: number;
  /** Why this invocation left the run `interrupted`: its stop's reason and the run's note. */
  stopped?: { reason: StopReason; note: string };
  /**
   * The spend cap this invocation ran under: the cap, the run's total known spend
   * (`usage.totalSpent.costUsd`), and whether the cap stopped it.
   */
  budget?: { maxCostUsd: number; spentUsd: number; reached: boolean };
  /**
   * The step journal in this invocation, when it replayed anything: steps returned from the
   * journal of interrupted executions, executions whose replay diverged (the agent took another
   * path), and the replayed chat calls' usage (reused: paid for by the interrupted execution;
   * part of its attempt's usage, as `usage.reused`, and of `usage.reused`, never of `spentNow`).
   */
  journal?: { replayed: number; diverged: number; reused: UsageTotal };
}

/**
 * What became of this invocation's attempts when the store stayed unwritable: those it committed
 * before, those kept in the fallback file (for `stet import`), and those nothing could hold.
 * Every one of them was paid for.
 */
export interface FallbackOutcome {
  /** The fallback file holding the kept attempts; null when nothing could be written. */
  path: string | null;
  committed: UsageTotal;
  kept: UsageTotal;
  lost: UsageTotal & { keys: Key[] };
  /** Each place a write was tried and refused, with why. */
  refused: { path: string; message: string }[];
  /**
   * Every executed attempt of the run the store holds (this invocation's committed ones
   * included), read after the failure; absent when the store could not be read either.
   */
  stored?: UsageTotal;
}

/**
 * Why an execution stops dispatching early: a signal (Ctrl-C, a server shutting down), a cancel
 * request (`stet cancel`, the API), a store that stayed unwritable, a takeover by another owner,
 * a misconfigured endpoint (its first samples all failed alike with a configuration-class
 * provider error; see `engine/misconfiguration.ts`), or the run's spend cap (`--max-cost`;
 * see `engine/budget.ts`).
 */
export type StopReason =
  | "signal"
  | "cancel"
  | "store-unwritable"
  | "ownership-lost"
  | "misconfigured"
  | "budget"
  /** `--detach`: every key waits on a provider batch; a later resume collects them. */
  | "detached";

/** What the engine tells its renderers (CLI, server, UI). It never prints. */
export type RunEvent =
  | {
      type: "run-started";
      runId: string;
      evalName: string;
      resumed: boolean;
      plan: PlanSummary;
      /** A new run started with `--reuse`: what it reused, from where, and why not the rest. */
      reuse?: ReuseSummary;
    }
  | { type: "attempt-committed"; attempt: Attempt; progress: Progress }
  /** A stored attempt scored again (a rescore, a resume's scorer error); its output stands. */
  | { type: "scoring-committed"; scoring: Scoring; progress: Progress }
  | { type: "store-retry"; message: string; failures: number; retryInMs: number }
  | { type: "stopping"; reason: StopReason; inflight: number; note?: string }
  /** Said once: `unpriced`, an attempt spent what the spend cap cannot count (no known price). */
  | { type: "warning"; code: "unpriced"; message: string }
  /**
   * A provider batch (`--batch`): submitted (recorded, then created), adopted (an earlier
   * execution's, found again), ended (its results downloaded), failed as a whole, or abandoned
   * (never created: its keys go in a new batch).
   */
  | {
      type: "batch";
      phase: "submitted" | "adopted" | "ended" | "failed" | "abandoned";
      nonce: string;
      batchId?: string;
      requests: number;
      note?: string;
    }
  | { type: "run-finished"; report: RunReport };
