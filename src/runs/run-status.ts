import type { Run, RunStatus } from "../core/types.js";

/** A status a run is left in when nobody owns it. */
export type SettledStatus = Exclude<RunStatus, "running">;

/**
 * The one rule for a run's status when its owner lets it go, whatever it did (executed keys,
 * imported results, or only settled a run whose status lagged its attempts): `completed` when no
 * key remains; else `interrupted` when the work was cut short (a signal, a cancel, a store that
 * failed, a dead owner) and only needs resuming; else `errored`: every planned key ran and some
 * ended in error, which `stet resume` re-runs.
 *
 * @example settledStatus({ remaining: 0, cutShort: true }) // "completed": nothing was cut
 */
export function settledStatus(end: { remaining: number; cutShort: boolean }): SettledStatus {
  if (end.remaining === 0) return "completed";
  return end.cutShort ? "interrupted" : "errored";
}

/**
 * Whether a run's own status says its work was cut short: `interrupted`, or `running` under an
 * owner that is gone. What an import that adds results, but executes nothing, carries over.
 */
export function wasCutShort(run: Run): boolean {
  return run.status === "interrupted" || run.status === "running";
}

/**
 * The status to put back when work on a claimed run fails before it changed anything: the one the
 * run had, but never `running` (its owner is this failed attempt, which is letting go).
 */
export function restoredStatus(run: Run): SettledStatus {
  return run.status === "running" ? "interrupted" : run.status;
}
