import type { Key, RunStatus } from "../../core/types.js";
import { distinctKeys, leaseLost, toWorker, type WorkerRow } from "../lease-rows.js";
import type { SqliteDatabase } from "./driver.js";
import type { LeaseClaim, WorkerIdentity, WorkerRecord, WorkerState } from "../types.js";

const DISTRIBUTED = `json_extract(config, '$.distributed') = 1`;

/**
 * The SQLite side of per-key leases (see the Store port's distributed-run methods): processes on
 * one machine. The adapter calls the writes inside `BEGIN IMMEDIATE`, which serializes claims
 * (SQLite has no SKIP LOCKED; its one writer lock is what keeps two claimants apart).
 */
export function prepareLeases(db: SqliteDatabase, now: () => number) {
  const s = leaseStatements(db);
  const isWorker = (runId: string, token: string) => s.worker.get({ runId, token }) !== undefined;

  return {
    create(runId: string, epochs: number): void {
      s.insertLeases.run({ runId, epochs });
    },
    register(runId: string, worker: WorkerIdentity): void {
      const { token, host, pid, concurrency, leaseMs } = worker;
      const nowMs = now();
      const at = new Date(nowMs).toISOString();
      s.register.run({ runId, token, host, pid, concurrency, leaseMs, now: at, nowMs });
    },
    /** Inside BEGIN IMMEDIATE. */
    claim(runId: string, token: string, limit: number, count = true): LeaseClaim {
      const nowMs = now();
      const me = s.worker.get({ runId, token });
      const keys: Key[] = [];
      if (me?.state === "active") {
        const expiresAt = nowMs + me.lease_ms;
        for (const row of s.pick.all({ runId, nowMs, limit })) {
          s.take.run({ runId, token, expiresAt, sampleId: row.sample_id, epoch: row.epoch });
          if (row.token !== null && row.token !== token)
            s.markLost.run({ runId, token: row.token });
          keys.push({ sampleId: row.sample_id, epoch: row.epoch });
        }
      }
      if (!count && keys.length === limit) return { keys };
      const counts = s.openCounts.get({ runId, token, nowMs });
      return { keys, open: counts?.open ?? 0, leasedElsewhere: counts?.elsewhere ?? 0 };
    },
    /** Inside the write's IMMEDIATE transaction: false when `token` is no worker of the run. */
    fence(runId: string, token: string, keys: readonly Key[]): boolean {
      if (!isWorker(runId, token)) return false;
      const nowMs = now();
      const active = s.worker.get({ runId, token })?.state === "active";
      for (const { sampleId, epoch } of distinctKeys(keys)) {
        if (!active || s.held.get({ runId, token, sampleId, epoch, nowMs })?.n !== 1) {
          throw leaseLost(runId, token);
        }
      }
      return true;
    },
    finish(runId: string, token: string, keys: readonly Key[]): void {
      let n = 0;
      for (const { sampleId, epoch } of distinctKeys(keys)) {
        n += s.finish.run({ runId, token, sampleId, epoch }).changes;
      }
      if (n > 0) s.countDone.run({ token, n });
    },
    countRejected(token: string): void {
      s.countRejected.run({ token });
    },
    /** Inside BEGIN IMMEDIATE. Undefined when `token` is no worker's. */
    heartbeat(runId: string, token: string) {
      const me = s.worker.get({ runId, token });
      if (!me) return undefined;
      const nowMs = now();
      if (me.state !== "active" || s.expiredOwn.get({ runId, token, nowMs })!.n > 0) {
        s.markLost.run({ runId, token });
        return { owned: false as const };
      }
      s.extend.run({ runId, token, expiresAt: nowMs + me.lease_ms });
      s.beat.run({ token, nowMs });
      const cancel = s.cancelRequested.get(runId)?.cancel_requested ?? null;
      return { owned: true as const, cancelRequested: cancel };
    },
    leave(runId: string, token: string, state: Exclude<WorkerState, "active">): void {
      s.release.run({ runId, token });
      s.setState.run({ runId, token, state });
    },
    expire(runId: string, token: string): number {
      const n = s.expire.run({ runId, token, nowMs: now() }).changes;
      s.setState.run({ runId, token, state: "lost" });
      return n;
    },
    list(runId: string): WorkerRecord[] {
      const nowMs = now();
      return s.list.all(runId).map((row) => toWorker(row, nowMs));
    },
    reopen(runId: string): boolean {
      const at = new Date(now()).toISOString();
      if (s.reopenRun.run({ runId, now: at }).changes === 0) return false;
      s.reopenLeases.run({ runId });
      // A run without an attempt (one just created, no seed) has no scored key: its open leases
      // are not looked at one by one.
      if (s.anyAttempt.get({ runId })) s.scoredLeases.run({ runId });
      return true;
    },
    cancel(runId: string, note: string): boolean {
      return s.cancel.run({ runId, note }).changes === 1;
    },
    close(runId: string, status: RunStatus, note: string | null): boolean {
      const nowMs = now();
      const final = status === "interrupted" ? 0 : 1;
      const at = new Date(nowMs).toISOString();
      return s.close.run({ runId, status, note, final, nowMs, now: at }).changes === 1;
    },
  };
}

/** A scored attempt of a lease's key for its sample's current fingerprint. */
const SCORED_NOW = `SELECT 1 FROM attempts_now a JOIN samples s ON s.run_id = a.run_id
  AND s.sample_id = a.sample_id
  WHERE a.run_id = @runId AND a.sample_id = leases.sample_id AND a.epoch = leases.epoch
    AND a.fingerprint = s.fingerprint AND a.status = 'scored'`;

/** The statements of leases and workers, prepared once (the first time a distributed run asks). */
function leaseStatements(db: SqliteDatabase) {
  return {
    insertLeases: db.prepare(
      `WITH RECURSIVE e(epoch) AS (SELECT 1 UNION ALL SELECT epoch + 1 FROM e WHERE epoch < @epochs)
       INSERT INTO leases (run_id, sample_id, epoch)
       SELECT @runId, s.sample_id, e.epoch FROM samples s CROSS JOIN e WHERE s.run_id = @runId`,
    ),
    register: db.prepare(
      `INSERT INTO workers (token, run_id, host, pid, concurrency, lease_ms, started_at,
         heartbeat_at, state)
       VALUES (@token, @runId, @host, @pid, @concurrency, @leaseMs, @now, @nowMs, 'active')`,
    ),
    worker: db.prepare<{ lease_ms: number; state: string }>(
      `SELECT lease_ms, state FROM workers WHERE token = @token AND run_id = @runId`,
    ),
    pick: db.prepare<{ sample_id: string; epoch: number; token: string | null }>(
      `SELECT sample_id, epoch, token FROM leases
       WHERE run_id = @runId AND done = 0 AND (token IS NULL OR expires_at <= @nowMs)
       ORDER BY epoch, sample_id LIMIT @limit`,
    ),
    take: db.prepare(
      `UPDATE leases SET token = @token, expires_at = @expiresAt, claims = claims + 1
       WHERE run_id = @runId AND sample_id = @sampleId AND epoch = @epoch`,
    ),
    markLost: db.prepare(
      `UPDATE workers SET state = 'lost' WHERE token = @token AND run_id = @runId AND state = 'active'`,
    ),
    openCounts: db.prepare<{ open: number; elsewhere: number | null }>(
      `SELECT COUNT(*) AS open,
         SUM(token IS NOT NULL AND token <> @token AND expires_at > @nowMs) AS elsewhere
       FROM leases WHERE run_id = @runId AND done = 0`,
    ),
    held: db.prepare<{ n: number }>(
      `SELECT COUNT(*) AS n FROM leases WHERE run_id = @runId AND sample_id = @sampleId
         AND epoch = @epoch AND token = @token AND done = 0 AND expires_at > @nowMs`,
    ),
    finish: db.prepare(
      `UPDATE leases SET done = 1 WHERE run_id = @runId AND sample_id = @sampleId
         AND epoch = @epoch AND token = @token AND done = 0`,
    ),
    countDone: db.prepare(`UPDATE workers SET keys_done = keys_done + @n WHERE token = @token`),
    countRejected: db.prepare(`UPDATE workers SET rejected = rejected + 1 WHERE token = @token`),
    expiredOwn: db.prepare<{ n: number }>(
      `SELECT COUNT(*) AS n FROM leases WHERE run_id = @runId AND token = @token AND done = 0
         AND expires_at <= @nowMs`,
    ),
    extend: db.prepare(
      `UPDATE leases SET expires_at = @expiresAt WHERE run_id = @runId AND token = @token AND done = 0`,
    ),
    beat: db.prepare(`UPDATE workers SET heartbeat_at = @nowMs WHERE token = @token`),
    cancelRequested: db.prepare<{ cancel_requested: string | null }>(
      `SELECT cancel_requested FROM runs WHERE id = ?`,
    ),
    release: db.prepare(
      `UPDATE leases SET token = NULL, expires_at = NULL
       WHERE run_id = @runId AND token = @token AND done = 0`,
    ),
    expire: db.prepare(
      `UPDATE leases SET expires_at = @nowMs - 1 WHERE run_id = @runId AND token = @token AND done = 0`,
    ),
    setState: db.prepare(
      `UPDATE workers SET state = @state WHERE token = @token AND run_id = @runId
         AND (state = 'active' OR @state = 'lost')`,
    ),
    list: db.prepare<WorkerRow>(
      `SELECT * FROM workers WHERE run_id = ? ORDER BY started_at, rowid`,
    ),
    reopenRun: db.prepare(
      `UPDATE runs SET status = 'running', note = NULL, cancel_requested = NULL, updated_at = @now
       WHERE id = @runId AND owner_token IS NULL AND ${DISTRIBUTED}`,
    ),
    reopenLeases: db.prepare(
      `UPDATE leases SET done = 0, token = NULL, expires_at = NULL
       WHERE run_id = @runId AND done = 1 AND NOT EXISTS (${SCORED_NOW})`,
    ),
    scoredLeases: db.prepare(
      `UPDATE leases SET done = 1 WHERE run_id = @runId AND done = 0 AND EXISTS (${SCORED_NOW})`,
    ),
    anyAttempt: db.prepare(`SELECT 1 FROM attempts WHERE run_id = @runId LIMIT 1`),
    cancel: db.prepare(
      `UPDATE runs SET cancel_requested = @note
       WHERE id = @runId AND status = 'running' AND owner_token IS NULL AND ${DISTRIBUTED}`,
    ),
    close: db.prepare(
      `UPDATE runs SET status = @status, note = @note, cancel_requested = NULL, updated_at = @now
       WHERE id = @runId AND status = 'running' AND owner_token IS NULL AND ${DISTRIBUTED}
         AND NOT EXISTS (SELECT 1 FROM leases WHERE run_id = @runId AND done = 0
           AND (@final OR (token IS NOT NULL AND expires_at > @nowMs)))`,
    ),
  };
}
