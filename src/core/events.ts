import type { ScorerMetrics, UsageTotal } from "./aggregate.js";
import type { ErrorGroup } from "./outcome-fold.js";
import type { Plan } from "./plan.js";
import type { Attempt, AttemptErrorType, Key, RunStatus } from "./types.js";

/** A plan without its key and sample lists: what events and reports carry. */
export type PlanSummary = Omit<Plan, "toExecute" | "samples" | "rerunAfter"> & {
  toExecute: number;
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
  spentNowUsd: number;
  elapsedMs: number;
}

export interface RunReport {
  runId: string;
  evalName: string;
  status: RunStatus;
  resumed: boolean;
  plan: PlanSummary;
  counts: { total: number; scored: number; errored: number; remaining: number };
  metrics: ScorerMetrics[];
  errorsByType: Partial<Record<AttemptErrorType, number>>;
  /** The errored outcomes by type, most frequent first, each with its first few keys quoted. */
  errors: ErrorGroup[];
  usage: {
    /** Attempts executed by this invocation. */
    spentNow: UsageTotal;
    /** Every attempt ever executed for the run (imported ones excluded). */
    totalSpent: UsageTotal;
    /** Outcomes this invocation did not pay for: preserved or imported. */
    reused: UsageTotal;
  };
  executed: number;
  preserved: number;
  wallMs: number;
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
 * or a misconfigured endpoint (its first samples all failed alike with a configuration-class
 * provider error; see `engine/misconfiguration.ts`).
 */
export type StopReason =
  "signal" | "cancel" | "store-unwritable" | "ownership-lost" | "misconfigured";

/** What the engine tells its renderers (CLI, server, UI). It never prints. */
export type RunEvent =
  | { type: "run-started"; runId: string; evalName: string; resumed: boolean; plan: PlanSummary }
  | { type: "attempt-committed"; attempt: Attempt; progress: Progress }
  | { type: "store-retry"; message: string; failures: number; retryInMs: number }
  | { type: "stopping"; reason: StopReason; inflight: number; note?: string }
  | { type: "run-finished"; report: RunReport };
