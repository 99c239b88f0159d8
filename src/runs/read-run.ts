import type { RunReport } from "../core/events.js";
import type { Owner, Run } from "../core/types.js";
import { ownerLiveness, type Liveness } from "../engine/owner.js";
import { storedReport } from "../engine/report.js";
import type { RunFilter, RunListing, Store } from "../store/types.js";
import { recoverOrphans, recoverRun } from "./recover-orphans.js";
import { requireRun } from "./require-run.js";

/** A run's owner with its liveness as judged now; never more than the store recorded. */
export type OwnerWithLiveness = Owner & Liveness;

export interface RunState {
  run: Run;
  owner: OwnerWithLiveness | null;
  /** Computed from the stored attempts: counts, the resume plan, metrics, cost. */
  report: RunReport;
}

export interface ReadOptions {
  staleMs?: number;
  /**
   * Interrupt the run(s) read if their owner is dead (orphan recovery on read), so a dead owner's
   * run is never reported as running (default false: a read changes nothing).
   */
  recover?: boolean;
}

/**
 * One run as it stands in the store, with its owner's liveness and its report: what `stet show`
 * and `GET /api/runs/:id` present. Throws `E_RUN_NOT_FOUND`.
 *
 * @example const { run, owner, report } = await readRun(store, "r_abc", { recover: true });
 */
export async function readRun(
  store: Store,
  runId: string,
  options: ReadOptions = {},
): Promise<RunState> {
  let run = await requireRun(store, runId);
  if (options.recover && (await recoverRun(store, run, options))?.outcome === "recovered") {
    run = await requireRun(store, runId);
  }
  return { run, owner: withLiveness(run.owner, options), report: await storedReport(store, run) };
}

/**
 * The runs of the store with their counts, newest first; with `recover`, dead owners' runs are
 * interrupted first (see `recoverOrphans`).
 *
 * @example const listings = await listRuns(store, {}, { recover: true });
 */
export async function listRuns(
  store: Store,
  filter: RunFilter = {},
  options: ReadOptions = {},
): Promise<RunListing[]> {
  if (options.recover) await recoverOrphans(store, options);
  return store.listRuns(filter);
}

/**
 * An owner with its liveness (`ownerLiveness`), or null.
 *
 * @example withLiveness(run.owner, { staleMs: 30_000 })?.alive
 */
export function withLiveness(
  owner: Owner | null,
  options: { staleMs?: number } = {},
): OwnerWithLiveness | null {
  return owner ? { ...owner, ...ownerLiveness(owner, options) } : null;
}
