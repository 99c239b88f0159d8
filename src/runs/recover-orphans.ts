import type { Run } from "../core/types.js";
import type { Store } from "../store/types.js";
import { judgeOwner } from "../engine/owner.js";
import { DEFAULT_STALE_MS } from "./stale-limit.js";
import { expireDeadWorkers, liveWorkers } from "./live-workers.js";

export interface RecoveredRun {
  runId: string;
  /** Why the owner was judged dead, e.g. "pid 4242 is gone". */
  reason: string;
}

export interface RecoveryResult {
  /** Runs whose dead owner was cleared: now `interrupted` and resumable. */
  recovered: RecoveredRun[];
  /** Running runs whose owner is alive: left as they were. */
  alive: string[];
  /** Runs that changed hands between our read and our write (someone claimed or finished them). */
  skipped: string[];
}

/**
 * Orphan recovery, shared by every process that opens a store (server boot and sweeps, `stet
 * list` and `stet show` on read): each run marked running whose owner is dead (same host: its
 * pid is gone; otherwise: its heartbeat is older than `staleMs`, or as far in the future, and did
 * not move while watched, see `judgeOwner`) becomes `interrupted` with a note, and so resumable.
 * Live owners are never touched. The runs are judged at once, so watching several takes the
 * time of one.
 *
 * @example
 * const { recovered } = await recoverOrphans(store, { staleMs: 30_000 });
 * recovered; // [{ runId: "r_abc", reason: "pid 4242 is gone" }]
 */
export async function recoverOrphans(
  store: Store,
  options: RecoveryOptions = {},
): Promise<RecoveryResult> {
  const result: RecoveryResult = { recovered: [], alive: [], skipped: [] };
  // One unpaged read: paging by offset while runs leave the "running" set would skip some.
  const running = await store.listRuns({ status: "running" });
  const recoveries = await Promise.all(running.map(({ run }) => recoverRun(store, run, options)));
  for (const [i, recovery] of recoveries.entries()) {
    const run = running[i]!.run;
    if (recovery === undefined) continue;
    if (recovery.outcome === "recovered") {
      result.recovered.push({ runId: run.id, reason: recovery.reason });
    } else result[recovery.outcome].push(run.id);
  }
  return result;
}

export interface RecoveryOptions {
  staleMs?: number;
  /** The owners' heartbeat interval, if not the one `staleMs` implies (`heartbeatInterval`). */
  heartbeatMs?: number;
  now?: () => Date;
  /** What the note says after the owner's death (default: `recovered at <time>`). */
  because?: string;
}

/** What recovering one run did. */
export type Recovery =
  | { outcome: "recovered"; reason: string }
  | { outcome: "alive"; reason: string }
  /** The run changed hands between our read and our write. */
  | { outcome: "skipped" };

/**
 * Recovers one run as read, if it is an orphan; undefined when it is not running.
 *
 * @example if ((await recoverRun(store, run))?.outcome === "recovered") run = await store.getRun(id);
 */
export async function recoverRun(
  store: Store,
  run: Run,
  options: RecoveryOptions = {},
): Promise<Recovery | undefined> {
  if (run.status === "running" && run.config.distributed)
    return recoverDistributed(store, run, options);
  if (run.status !== "running" || !run.owner) return undefined;
  const liveness = await judgeOwner(store, { ...run, owner: run.owner }, options);
  if (liveness.alive) return { outcome: "alive", reason: liveness.reason };
  const because =
    options.because ?? `recovered at ${(options.now ?? (() => new Date()))().toISOString()}`;
  const note = `owner pid ${run.owner.pid} on ${run.owner.host} died (${liveness.reason}); ${because}`;
  // The compare-and-set is on the token we judged dead: if a resumer claimed the run since our
  // read, the token changed and the new owner is left alone.
  if (await store.interruptOrphan(run.id, run.owner.token, note)) {
    return { outcome: "recovered", reason: liveness.reason };
  }
  return { outcome: "skipped" };
}

/**
 * A running distributed run is an orphan when none of its workers is alive (see `liveWorkers`)
 * and no lease on it is live: their leases expired, or were expired because their pids on this
 * host are gone. A run opened to workers less than the stale limit ago is left alone (its first
 * worker may not have joined yet).
 */
async function recoverDistributed(
  store: Store,
  run: Run,
  options: RecoveryOptions,
): Promise<Recovery> {
  const staleMs = options.staleMs ?? DEFAULT_STALE_MS;
  const now = (options.now ?? (() => new Date()))();
  if (now.getTime() - Date.parse(run.updatedAt) < staleMs) {
    return { outcome: "alive", reason: "opened to workers just now" };
  }
  await expireDeadWorkers(store, run.id);
  const live = await liveWorkers(store, run.id);
  if (live.length > 0) return { outcome: "alive", reason: `${live.length} live worker(s)` };
  const because = options.because ?? `recovered at ${now.toISOString()}`;
  const note = `no worker of the distributed run is alive; ${because}`;
  if (await store.closeDistributed(run.id, "interrupted", note)) {
    return { outcome: "recovered", reason: "no live worker" };
  }
  return { outcome: "alive", reason: "a worker's lease is still live" };
}
