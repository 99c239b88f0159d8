import { StetError } from "../core/errors.js";
import type { Run } from "../core/types.js";
import { hostId } from "../engine/owner.js";
import { expireDeadWorkers } from "../engine/lease-source.js";
import { liveWorkers } from "./run-workers.js";
import { recoverRun } from "./recover-orphans.js";
import { cancelWaitingBatches, type BatchCancels } from "./cancel-batches.js";
import { requireLeases, type Store } from "../store/types.js";
import { requireRun } from "./require-run.js";

export interface CancelOptions {
  store: Store;
  runId: string;
  staleMs?: number;
  /**
   * Stops the run at once if this process executes it (a server's own executions) and says
   * whether it did; tried first.
   */
  stopLocal?: (runId: string) => boolean;
  /**
   * Whether a live owner elsewhere is asked through the store (default true): it sees the request
   * at its next heartbeat and stops as on SIGINT. When false such a run is refused (`E_RUN_ACTIVE`).
   */
  throughStore?: boolean;
  /** When given, resolves only once the run is no longer running, or this many ms have passed. */
  waitMs?: number;
  /** How often the wait reads the run (default 250 ms). */
  pollMs?: number;
}

export interface CancelResult {
  runId: string;
  /**
   * `stopping`: this process is stopping it; `requested`: its owner was asked through the store;
   * `interrupted`: its owner was dead, and the run was recovered on the spot; with `waitMs`,
   * `stopped` (the run's status says how: interrupted, or completed when its last samples were
   * already finishing) or `still-running` when the wait ran out first; `batches-cancelled`: the
   * run was not running (left by `--detach`), and its waiting provider batches were cancelled.
   */
  status:
    "stopping" | "requested" | "interrupted" | "stopped" | "still-running" | "batches-cancelled";
  /** The run as last read. */
  run: Run;
  /**
   * A run no process executes (not running, or its owner dead) that waits on provider batches:
   * what cancelling them at the provider did (see `cancelWaitingBatches`).
   */
  batches?: BatchCancels;
}

/**
 * Cancels a run wherever it executes; it becomes `interrupted`, i.e. resumable, and in-flight
 * samples finish within the owner's grace period. A run that is not running is refused
 * (`E_RUN_NOT_RUNNING`); one marked running whose owner is dead is recovered on the spot.
 *
 * @example await cancelRun({ store, runId: "r_abc", waitMs: 30_000 }); // { status: "interrupted" }
 */
export async function cancelRun(options: CancelOptions): Promise<CancelResult> {
  const { store, runId } = options;
  const run = await requireRun(store, runId);
  // Every worker of a distributed run is asked through the store, a local one among them.
  if (run.config.distributed && run.status === "running") return cancelDistributed(run, options);
  if (options.stopLocal?.(runId)) return { runId, status: "stopping", run };
  if (run.status !== "running" || !run.owner) {
    // Nobody executes it: only its provider batches (a detached run's) can still be running.
    const batches = await cancelWaitingBatches(store, runId);
    if (batches) return { runId, status: "batches-cancelled", run, batches };
    throw new StetError("E_RUN_NOT_RUNNING", `run ${runId} is ${run.status}; nothing to cancel`);
  }
  const recovery = await recoverRun(store, run, {
    ...options,
    because: "interrupted by a cancel request",
  });
  if (recovery?.outcome === "recovered") {
    const batches = await cancelWaitingBatches(store, runId);
    const now = await requireRun(store, runId);
    return { runId, status: "interrupted", run: now, ...(batches ? { batches } : {}) };
  }
  if (recovery?.outcome !== "alive") throw claimedMeanwhile(runId);
  if (options.throughStore === false) {
    throw new StetError(
      "E_RUN_ACTIVE",
      `run ${runId} is executed by another process (${recovery.reason}); cancel it where it runs`,
    );
  }
  const request = `requested by pid ${process.pid} on ${hostId()} at ${new Date().toISOString()}`;
  if (!(await store.runs.requestCancel(runId, run.owner.token, request)))
    throw claimedMeanwhile(runId);
  if (options.waitMs === undefined) return { runId, status: "requested", run };
  return waitForStop(store, runId, options.waitMs, options.pollMs ?? 250);
}

/**
 * A running distributed run: every worker is asked through the store (each sees it at its next
 * heartbeat, stops dispatching and leaves; the last one leaves the run interrupted). With no live
 * worker left, the run is interrupted on the spot.
 */
async function cancelDistributed(run: Run, options: CancelOptions): Promise<CancelResult> {
  const { store } = options;
  const leases = requireLeases(store);
  const runId = run.id;
  await expireDeadWorkers(store, runId);
  const request = `requested by pid ${process.pid} on ${hostId()} at ${new Date().toISOString()}`;
  if ((await liveWorkers(store, runId)).length === 0) {
    const note = "interrupted by a cancel request (no live worker)";
    if (await leases.closeRun(runId, "interrupted", note)) {
      return { runId, status: "interrupted", run: await requireRun(store, runId) };
    }
  }
  if (!(await leases.requestCancel(runId, request))) {
    const now = await requireRun(store, runId);
    return { runId, status: "stopped", run: now };
  }
  if (options.waitMs === undefined) return { runId, status: "requested", run };
  return waitForStop(store, runId, options.waitMs, options.pollMs ?? 250);
}

async function waitForStop(
  store: Store,
  runId: string,
  waitMs: number,
  pollMs: number,
): Promise<CancelResult> {
  const deadline = Date.now() + waitMs;
  for (;;) {
    const run = await requireRun(store, runId);
    if (run.status !== "running") return { runId, status: "stopped", run };
    if (Date.now() >= deadline) return { runId, status: "still-running", run };
    await new Promise((resolve) => setTimeout(resolve, pollMs));
  }
}

function claimedMeanwhile(runId: string): StetError {
  return new StetError("E_RUN_ACTIVE", `run ${runId} was claimed by another process just now`);
}
