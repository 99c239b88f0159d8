import { StetError } from "../core/errors.js";
import type { OwnerIdentity, Run } from "../core/types.js";
import type { Store } from "../store/types.js";
import { ownerLiveness } from "./owner.js";

/**
 * Takes ownership of an existing run, or throws `E_RUN_ACTIVE` naming the live owner. The claim
 * is the store's compare-and-set on the owner token we judged dead, so of any number of
 * concurrent claimants exactly one wins; the losers see `E_RUN_ACTIVE` too.
 *
 * @example await acquireRun(store, run, newOwnerIdentity(), { staleMs: 30_000 });
 */
export async function acquireRun(
  store: Store,
  run: Run,
  identity: OwnerIdentity,
  options: { staleMs?: number } = {},
): Promise<void> {
  const active = claimRefusal(run, options);
  if (active) throw active;
  if (await store.claimRun(run.id, identity, run.owner?.token ?? null)) return;
  const now = await store.getRun(run.id);
  throw new StetError(
    "E_RUN_ACTIVE",
    `run ${run.id} was claimed by another process just now${now?.owner ? ` (${describeOwner(now)})` : ""}`,
    { details: { owner: now?.owner ?? null } },
  );
}

/**
 * The `E_RUN_ACTIVE` error naming the run's live owner, or undefined when nobody (alive) owns it.
 *
 * @example const active = claimRefusal(run, { staleMs: 30_000 }); if (active) return refuse(active);
 */
export function claimRefusal(run: Run, options: { staleMs?: number } = {}): StetError | undefined {
  if (!run.owner || !ownerLiveness(run.owner, options).alive) return undefined;
  return new StetError("E_RUN_ACTIVE", `run ${run.id} is being executed by ${describeOwner(run)}`, {
    details: { owner: run.owner },
  });
}

/** "pid 4242 on host#1a2b, heartbeat 1.2s ago" */
export function describeOwner(run: Run): string {
  if (!run.owner) return "nobody";
  const age = (run.owner.heartbeatAgeMs / 1000).toFixed(1);
  return `pid ${run.owner.pid} on ${run.owner.host}, heartbeat ${age}s ago`;
}
