import { hostId, pidAlive } from "../engine/owner.js";
export { expireDeadWorkers } from "../engine/lease-source.js";
import type { Store, WorkerRecord } from "../store/types.js";

/**
 * The workers of a distributed run that are alive: active, their last heartbeat younger than
 * their lease time (else their leases expired), and, on this host, their pid still there.
 *
 * @example (await liveWorkers(store, "r_abc")).length // 3
 */
export async function liveWorkers(store: Store, runId: string): Promise<WorkerRecord[]> {
  const host = hostId();
  return (await store.listWorkers(runId)).filter(
    (w) =>
      w.state === "active" && w.heartbeatAgeMs < w.leaseMs && (w.host !== host || pidAlive(w.pid)),
  );
}
