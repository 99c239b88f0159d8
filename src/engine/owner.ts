import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { hostname } from "node:os";
import type { Owner, OwnerIdentity, Run } from "../core/types.js";
import type { Store } from "../store/types.js";

/** Default age after which another host's owner is presumed dead. */
export const DEFAULT_STALE_MS = 30_000;
/** How often an owner refreshes its heartbeat. */
export const DEFAULT_HEARTBEAT_MS = 2_000;

/**
 * This machine's identity: the hostname plus the kernel boot id, so two containers that share
 * a hostname are told apart and a rebooted machine does not mistake old pids for live ones.
 */
export function hostId(): string {
  try {
    const boot = readFileSync("/proc/sys/kernel/random/boot_id", "utf8").trim().slice(0, 8);
    return `${hostname()}#${boot}`;
  } catch {
    return hostname();
  }
}

/** A fresh owner identity for this process; the token is new on every claim. */
export function newOwnerIdentity(): OwnerIdentity {
  return { host: hostId(), pid: process.pid, token: randomBytes(12).toString("hex") };
}

export interface Liveness {
  alive: boolean;
  reason: string;
  /**
   * Set on a death judged by the heartbeat's wall-clock age alone (stale, or stamped in the
   * future): a clock that jumped can say that of a live owner, so a takeover first confirms it
   * by watching the heartbeat (`judgeOwner`). A pid that is gone needs no confirmation.
   */
  unconfirmed?: true;
  /** Set when `judgeOwner` watched the heartbeat to reach this verdict. */
  watched?: true;
}

/**
 * How often an owner beats: every 2 s, or a quarter of a smaller stale limit, so a live owner
 * never looks stale between two beats.
 *
 * @example heartbeatInterval({ staleMs: 1_500 }) // 375
 */
export function heartbeatInterval(options: { staleMs?: number; heartbeatMs?: number }): number {
  const staleMs = options.staleMs ?? DEFAULT_STALE_MS;
  return options.heartbeatMs ?? Math.min(DEFAULT_HEARTBEAT_MS, Math.floor(staleMs / 4));
}

/**
 * Whether a recorded owner is still alive, as far as one reading can tell. On this host a pid
 * that is gone answers at once. Otherwise the heartbeat does: older than the stale limit (also on
 * this host, so a reused or stopped pid cannot keep a run locked forever), or further in the
 * future than the limit (a clock moved back), it is presumed dead, `unconfirmed`.
 *
 * @example ownerLiveness(run.owner, { staleMs: 30_000 }) // { alive: false, reason: "pid 123 is gone" }
 */
export function ownerLiveness(owner: Owner, options: { staleMs?: number } = {}): Liveness {
  const staleMs = options.staleMs ?? DEFAULT_STALE_MS;
  const sameHost = owner.host === hostId();
  if (sameHost && !pidAlive(owner.pid)) return { alive: false, reason: `pid ${owner.pid} is gone` };
  const limit = `stale after ${staleMs / 1000}s`;
  if (owner.heartbeatAgeMs > staleMs) {
    const reason = `its heartbeat is ${seconds(owner.heartbeatAgeMs)}s old (${limit})`;
    return { alive: false, reason, unconfirmed: true };
  }
  if (-owner.heartbeatAgeMs > staleMs) {
    const reason = `its heartbeat is ${seconds(-owner.heartbeatAgeMs)}s in the future (${limit}): a clock moved`;
    return { alive: false, reason, unconfirmed: true };
  }
  const beat = `heartbeat ${describeAge(owner.heartbeatAgeMs)}`;
  if (sameHost) return { alive: true, reason: `pid ${owner.pid} on this host is alive (${beat})` };
  return { alive: true, reason: `host ${owner.host} pid ${owner.pid} ${beat}` };
}

/**
 * "3s ago", or "2s in the future" for a heartbeat stamped ahead of the store's clock, in seconds
 * with `digits` decimals.
 *
 * @example describeAge(-1_234, 1) // "1.2s in the future"
 */
export function describeAge(ageMs: number, digits = 0): string {
  const s = (Math.abs(ageMs) / 1000).toFixed(digits);
  return ageMs < 0 ? `${s}s in the future` : `${s}s ago`;
}

function seconds(ms: number): number {
  return Math.round(ms / 1000);
}

/**
 * A run's owner judged for a takeover. A death that only the heartbeat's wall-clock age tells
 * (`unconfirmed`) is confirmed by watching: the run is read again for twice the heartbeat
 * interval (at most the stale limit), timed by the monotonic clock, and the owner counts as dead
 * only if its heartbeat did not move. A live owner whose clock, or the judge's, jumped keeps
 * beating and is left alone; a dead one is not kept alive by a heartbeat stamped in the future.
 * The run as first read stays what a claim compares with: if it changed hands meanwhile, that
 * comes back as alive.
 *
 * @example const liveness = await judgeOwner(store, run, { staleMs: 30_000 });
 */
export async function judgeOwner(
  store: Pick<Store, "runs">,
  run: Run & { owner: Owner },
  options: { staleMs?: number; heartbeatMs?: number } = {},
): Promise<Liveness> {
  const first = ownerLiveness(run.owner, options);
  if (!first.unconfirmed) return first;
  const windowMs = Math.min(2 * heartbeatInterval(options), options.staleMs ?? DEFAULT_STALE_MS);
  const started = performance.now();
  for (;;) {
    const left = windowMs - (performance.now() - started);
    if (left <= 0) {
      const reason = `${first.reason}, and it did not beat in ${windowMs / 1000}s`;
      return { alive: false, reason, watched: true };
    }
    await new Promise((resolve) => setTimeout(resolve, Math.min(left, windowMs / 8)));
    const now = await store.runs.get(run.id);
    if (now?.owner?.token !== run.owner.token || now.status !== run.status) {
      return {
        alive: true,
        reason: "the run changed hands while its owner was watched",
        watched: true,
      };
    }
    if (now.owner.heartbeatAt !== run.owner.heartbeatAt) {
      const reason = `${first.reason}, yet it beat again while watched: it is alive (check the clocks)`;
      return { alive: true, reason, watched: true };
    }
  }
}

export function pidAlive(pid: number): boolean {
  if (pid === process.pid) return true;
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: the process exists but belongs to someone else.
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}
