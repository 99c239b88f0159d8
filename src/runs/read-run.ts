import type { RunReport } from "../core/events.js";
import type { Owner, Run } from "../core/types.js";
import { ownerLiveness, type Liveness } from "../engine/owner.js";
import { storedReport } from "../engine/report.js";
import type { RunFilter, RunListing, Store } from "../store/types.js";
import { recoverOrphans, recoverRun } from "./recover-orphans.js";
import { requireRun } from "./require-run.js";
import { readWorkers, workingCounts, type WorkerView } from "./run-workers.js";

/** A run's owner with its liveness as judged now; never more than the store recorded. */
export type OwnerWithLiveness = Owner & Liveness;

export interface RunState {
  /** The run as a reader sees it (`runAsRead`): a dead owner's run reads as interrupted. */
  run: Run;
  owner: OwnerWithLiveness | null;
  /** Whether the run is stored as running while its owner is dead (`owner.reason` says why). */
  orphaned: boolean;
  /** Computed from the stored attempts: counts, the resume plan, metrics, cost. */
  report: RunReport;
  /** A distributed run's workers (it has no owner while they work on it); absent otherwise. */
  workers?: WorkerView[];
}

export interface ReadOptions {
  staleMs?: number;
  /** The owners' heartbeat interval, if not the one `staleMs` implies (`heartbeatInterval`). */
  heartbeatMs?: number;
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
  let stored = await requireRun(store, runId);
  const recovery = options.recover ? await recoverRun(store, stored, options) : undefined;
  if (recovery?.outcome === "recovered") stored = await requireRun(store, runId);
  let { run, owner, orphaned } = runAsRead(stored, options);
  // Watched by the recovery and found beating (a clock jumped): alive, whatever its age says.
  if (recovery?.outcome === "alive" && owner && !owner.alive) {
    ({ run, orphaned } = { run: stored, orphaned: false });
    owner = { ...owner, alive: true, reason: recovery.reason };
  }
  const [report, workers] = await Promise.all([storedReport(store, run), readWorkers(store, run)]);
  return { run, owner, orphaned, report, ...(workers ? { workers } : {}) };
}

/**
 * A run's report as `stet show` reads it: from the figures the store keeps (no attempt read).
 *
 * @example (await runReport(store, run)).metrics
 */
export function runReport(store: Store, run: Run): Promise<RunReport> {
  return storedReport(store, run);
}

/** A run as `runAsRead` gives it. */
export interface RunAsRead {
  run: Run;
  owner: OwnerWithLiveness | null;
  orphaned: boolean;
}

/**
 * A run as a reader should see it, derived without writing anything: a run stored as running
 * whose owner is dead (same host: its pid is gone; elsewhere: its heartbeat is stale) reads as
 * `interrupted`, which is what it is (resumable), whether or not orphan recovery has reached it
 * yet. The owner is kept, with its liveness, so the reason shows.
 *
 * @example runAsRead(run, { staleMs: 30_000 }) // { run: { …, status: "interrupted" }, orphaned: true, owner: { alive: false, reason: "pid 4242 is gone", … } }
 */
export function runAsRead(run: Run, options: { staleMs?: number } = {}): RunAsRead {
  const owner = withLiveness(run.owner, options);
  const orphaned = run.status === "running" && owner !== null && !owner.alive;
  return { run: orphaned ? { ...run, status: "interrupted" } : run, owner, orphaned };
}

/** A listed run; a distributed one with how many workers execute it now. */
export interface ListedRun extends RunListing {
  /** Distributed runs only: its workers that are active with a live lease (0 unless running). */
  activeWorkers?: number;
}

/**
 * The runs of the store with their counts, newest first; with `recover`, dead owners' runs are
 * interrupted first (see `recoverOrphans`). A distributed run carries its active workers' count
 * (one more query for each running one, none for any other run).
 *
 * @example const listings = await listRuns(store, {}, { recover: true });
 */
export async function listRuns(
  store: Store,
  filter: RunFilter = {},
  options: ReadOptions = {},
): Promise<ListedRun[]> {
  if (options.recover) await recoverOrphans(store, options);
  const listed = await store.reads.listRuns(filter);
  const working = await workingCounts(
    store,
    listed.map((l) => l.run),
  );
  return listed.map((l) => {
    const activeWorkers = working.get(l.run.id);
    return activeWorkers === undefined ? l : { ...l, activeWorkers };
  });
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
