import type { Run } from "../core/types.js";
import type { Store } from "../store/types.js";
import { judgeOwner } from "../engine/owner.js";

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
  const running = await store.reads.listRuns({ status: "running" });
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
 * @example if ((await recoverRun(store, run))?.outcome === "recovered") run = await store.runs.get(id);
 */
export async function recoverRun(
  store: Store,
  run: Run,
  options: RecoveryOptions = {},
): Promise<Recovery | undefined> {
  // A distributed run has no owner: it stays open to workers, however many are alive (none is
  // a fleet scaled to zero, not a dead owner); `stet cancel` interrupts it.
  if (run.status !== "running" || !run.owner) return undefined;
  const liveness = await judgeOwner(store, { ...run, owner: run.owner }, options);
  if (liveness.alive) return { outcome: "alive", reason: liveness.reason };
  const because =
    options.because ?? `recovered at ${(options.now ?? (() => new Date()))().toISOString()}`;
  const note = `owner pid ${run.owner.pid} on ${run.owner.host} died (${liveness.reason}); ${because}`;
  // The compare-and-set is on the token we judged dead: if a resumer claimed the run since our
  // read, the token changed and the new owner is left alone.
  if (await store.runs.interruptOrphan(run.id, run.owner.token, note)) {
    return { outcome: "recovered", reason: liveness.reason };
  }
  return { outcome: "skipped" };
}
