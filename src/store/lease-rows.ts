import { StetError } from "../core/errors.js";
import type { Key } from "../core/types.js";
import type { WorkerRecord, WorkerState } from "./types.js";

/** A `workers` row as both adapters read it. */
export interface WorkerRow {
  token: string;
  host: string;
  pid: number;
  concurrency: number;
  lease_ms: number;
  started_at: string;
  heartbeat_at: number;
  keys_done: number;
  rejected: number;
  state: string;
}

const STATES: readonly WorkerState[] = ["active", "finished", "stopped", "lost"];

/** Maps a worker row, its heartbeat age on the store's clock (`nowMs`). */
export function toWorker(row: WorkerRow, nowMs: number): WorkerRecord {
  const state = STATES.find((s) => s === row.state);
  if (!state) throw new StetError("E_STORE", `corrupt state of worker ${row.token}: ${row.state}`);
  return {
    token: row.token,
    host: row.host,
    pid: Number(row.pid),
    concurrency: Number(row.concurrency),
    leaseMs: Number(row.lease_ms),
    startedAt: row.started_at,
    heartbeatAt: new Date(Number(row.heartbeat_at)).toISOString(),
    heartbeatAgeMs: nowMs - Number(row.heartbeat_at),
    keysDone: Number(row.keys_done),
    rejected: Number(row.rejected),
    state,
  };
}

/** The distinct keys of a batch (a batch may hold an error and its retry of one key). */
export function distinctKeys(keys: readonly Key[]): Key[] {
  const seen = new Map<string, Key>();
  for (const k of keys) seen.set(`${k.sampleId}\u0000${k.epoch}`, k);
  return [...seen.values()];
}

/** The E_FENCED of a worker whose lease on some key of its write is gone (expired or taken). */
export function leaseLost(runId: string, token: string): StetError {
  return new StetError(
    "E_FENCED",
    `run ${runId}: worker ${token.slice(0, 8)} no longer holds the lease of every key it wrote ` +
      "(it expired, and may have been taken over); the write was rejected",
    { details: { runId, worker: token } },
  );
}
