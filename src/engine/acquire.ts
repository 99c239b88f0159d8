import { StetError } from "../core/errors.js";
import type { OwnerIdentity, Run } from "../core/types.js";
import type { Store } from "../store/types.js";
import { describeAge, judgeOwner, ownerLiveness } from "./owner.js";

/**
 * Takes ownership of an existing run, or throws `E_RUN_ACTIVE` naming the live owner. The claim
 * is the store's compare-and-set on the owner token we judged dead, so of any number of
 * concurrent claimants exactly one wins; the losers see `E_RUN_ACTIVE` too. `run` is the run as
 * the caller read it and judged it with `takeoverRefusal`; this checks that reading once more
 * (`claimRefusal`) without watching again.
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
  // A running distributed run has no owner but is not free: its workers hold leases on its keys.
  if (run.config.distributed && run.status === "running") {
    throw new StetError(
      "E_DISTRIBUTED",
      `run ${run.id} is a distributed run executed by its workers: it cannot be claimed by one ` +
        `process while it runs (\`stet cancel ${run.id}\` stops it)`,
      { details: { runId: run.id } },
    );
  }
  if (await store.runs.claim(run.id, identity, run.owner?.token ?? null)) return;
  const now = await store.runs.get(run.id);
  throw new StetError(
    "E_RUN_ACTIVE",
    `run ${run.id} was claimed by another process just now${now?.owner ? ` (${describeOwner(now)})` : ""}`,
    { details: { runId: run.id, owner: now?.owner ?? null } },
  );
}

/**
 * The `E_RUN_ACTIVE` error naming the run's live owner, or undefined when nobody (alive) owns it,
 * judged from this one reading: what a claim checks again just before its compare-and-set.
 *
 * @example const active = claimRefusal(run, { staleMs: 30_000 }); if (active) throw active;
 */
export function claimRefusal(run: Run, options: { staleMs?: number } = {}): StetError | undefined {
  if (!run.owner || !ownerLiveness(run.owner, options).alive) return undefined;
  return activeError(run);
}

/**
 * Like `claimRefusal`, for the decision to take a run over: an owner presumed dead by its
 * heartbeat's wall-clock age alone is watched first (`judgeOwner`), so a clock that jumped
 * neither hands a live owner's run to a second one nor strands a dead owner's.
 *
 * @example const active = await takeoverRefusal(store, run, { staleMs: 30_000 });
 */
export async function takeoverRefusal(
  store: Pick<Store, "runs">,
  run: Run,
  options: { staleMs?: number; heartbeatMs?: number } = {},
): Promise<StetError | undefined> {
  if (!run.owner) return undefined;
  const liveness = await judgeOwner(store, { ...run, owner: run.owner }, options);
  if (!liveness.alive) return undefined;
  return activeError(run, liveness.watched ? ` (${liveness.reason})` : "");
}

function activeError(run: Run, why = ""): StetError {
  return new StetError(
    "E_RUN_ACTIVE",
    `run ${run.id} is being executed by ${describeOwner(run)}${why}`,
    { details: { runId: run.id, owner: run.owner } },
  );
}

/** "pid 4242 on host#1a2b, heartbeat 1.2s ago" */
export function describeOwner(run: Run): string {
  if (!run.owner) return "nobody";
  return `pid ${run.owner.pid} on ${run.owner.host}, heartbeat ${describeAge(run.owner.heartbeatAgeMs, 1)}`;
}

/**
 * The `E_FENCED` error of an owner that lost its run: who has it now (or how it ended), and why
 * that happens, for the process that stopped on it.
 *
 * @example throw await takenOver(store, "r_abc");
 */
export async function takenOver(store: Pick<Store, "runs">, runId: string): Promise<StetError> {
  const now = await store.runs.get(runId).catch(() => undefined);
  const by = now?.owner ? `by ${describeOwner(now)}` : "by another process";
  const state = now && !now.owner ? `; the run is ${now.status} now` : "";
  return new StetError(
    "E_FENCED",
    `run ${runId} was taken over ${by}: this process had not heartbeated for longer than the ` +
      `stale limit (stopped, suspended or stalled), so it was presumed dead. It stopped and wrote ` +
      `nothing more${state}.`,
    { details: { owner: now?.owner ?? null } },
  );
}
