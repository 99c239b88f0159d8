import { createHash } from "node:crypto";
import type { Run } from "../core/types.js";
import { hostId, pidAlive } from "../engine/owner.js";
import { requireLeases, type Store, type WorkerRecord } from "../store/types.js";

/** A worker of a distributed run as show, the API and the UI present it: never its token. */
export interface WorkerView extends Omit<WorkerRecord, "token"> {
  /** A short id derived from the token (`workerId`): names the worker, cannot write as it. */
  id: string;
  /** Active, but silent for longer than its lease: its keys are anyone's to claim. */
  leaseExpired: boolean;
}

/**
 * A worker's public id: the first 8 hex digits of its token's sha256. The token fences the
 * worker's writes, so no part of it is shown; a hash names the worker without giving any away.
 *
 * @example workerId("9f0c…") // "3b1d07ae"
 */
export function workerId(token: string): string {
  return createHash("sha256").update(token).digest("hex").slice(0, 8);
}

/**
 * A stored worker as it is shown.
 *
 * @example workerView(record) // { id: "3b1d07ae", host, pid, keysDone, state: "active", … }
 */
export function workerView(record: WorkerRecord): WorkerView {
  const { token, ...shown } = record;
  const leaseExpired = record.state === "active" && record.heartbeatAgeMs > record.leaseMs;
  return { id: workerId(token), ...shown, leaseExpired };
}

/** Whether a worker is executing keys now: active, with its lease still live. */
export function isWorking(worker: WorkerView): boolean {
  return worker.state === "active" && !worker.leaseExpired;
}

/**
 * The workers of a distributed run that are alive: working (`isWorking`) and, on this host,
 * their pid still there.
 *
 * @example (await liveWorkers(store, "r_abc")).length // 3
 */
export async function liveWorkers(store: Store, runId: string): Promise<WorkerView[]> {
  const host = hostId();
  return (await requireLeases(store).list(runId))
    .map(workerView)
    .filter((w) => isWorking(w) && (w.host !== host || pidAlive(w.pid)));
}

/**
 * The workers of a distributed run in the order they joined; undefined for any other run (no
 * query is made for it).
 *
 * @example (await readWorkers(store, run))?.filter(isWorking).length
 */
export async function readWorkers(store: Store, run: Run): Promise<WorkerView[] | undefined> {
  if (!run.config.distributed) return undefined;
  return (await requireLeases(store).list(run.id)).map(workerView);
}

/**
 * How many workers execute each running distributed run among `runs`: one query per such run,
 * none for the others (a distributed run that is not running has no working worker: 0).
 *
 * @example (await workingCounts(store, listed.map((l) => l.run))).get("r_abc") // 3
 */
export async function workingCounts(
  store: Store,
  runs: readonly Run[],
): Promise<Map<string, number>> {
  const distributed = runs.filter((run) => run.config.distributed);
  const counts = await Promise.all(
    distributed.map(async (run) =>
      run.status === "running"
        ? ((await readWorkers(store, run)) ?? []).filter(isWorking).length
        : 0,
    ),
  );
  return new Map(distributed.map((run, i) => [run.id, counts[i]!]));
}
