import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { hostname } from "node:os";
import type { Owner, OwnerIdentity } from "../core/types.js";

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
}

/**
 * Whether a recorded owner is still alive. On this host the pid answers at once; elsewhere the
 * heartbeat does. A heartbeat older than the stale limit also means dead on this host, so a
 * reused pid cannot keep a dead owner's run locked forever.
 *
 * @example ownerLiveness(run.owner, { staleMs: 30_000 }) // { alive: false, reason: "pid 123 is gone" }
 */
export function ownerLiveness(owner: Owner, options: { staleMs?: number } = {}): Liveness {
  const staleMs = options.staleMs ?? DEFAULT_STALE_MS;
  const age = Math.round(owner.heartbeatAgeMs / 1000);
  if (owner.heartbeatAgeMs > staleMs) {
    return {
      alive: false,
      reason: `its heartbeat is ${age}s old (stale after ${staleMs / 1000}s)`,
    };
  }
  if (owner.host === hostId()) {
    if (!pidAlive(owner.pid)) return { alive: false, reason: `pid ${owner.pid} is gone` };
    return {
      alive: true,
      reason: `pid ${owner.pid} on this host is alive (heartbeat ${age}s ago)`,
    };
  }
  return { alive: true, reason: `host ${owner.host} pid ${owner.pid} heartbeat ${age}s ago` };
}

function pidAlive(pid: number): boolean {
  if (pid === process.pid) return true;
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: the process exists but belongs to someone else.
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}
