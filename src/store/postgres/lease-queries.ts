import { DB_NOW_ISO, DB_NOW_MS, statement, type Queryable } from "./driver.js";
import { distinctKeys, leaseLost, toWorker, type WorkerRow } from "../lease-rows.js";
import type { Key, RunStatus } from "../../core/types.js";
import type { LeaseClaim, WorkerIdentity, WorkerRecord, WorkerState } from "../types.js";

/** A scored attempt of a lease's key (`l`) for its sample's current fingerprint. */
const SCORED_NOW = `SELECT 1 FROM attempts_now a JOIN samples s ON s.run_id = a.run_id
  AND s.sample_id = a.sample_id
  WHERE a.run_id = @runId AND a.sample_id = l.sample_id AND a.epoch = l.epoch
    AND a.fingerprint = s.fingerprint AND a.status = 'scored'`;

/**
 * The PostgreSQL side of per-key leases (see the Store port's distributed-run methods). Every
 * expiry is judged on the database server's clock (DB_NOW_MS), so hosts with skewed clocks agree.
 */
const sql = {
  insertLeases: statement(
    `INSERT INTO leases (run_id, sample_id, epoch)
     SELECT @runId::text, s.sample_id, e.epoch FROM samples s
       CROSS JOIN generate_series(1, @epochs::int) AS e(epoch)
     WHERE s.run_id = @runId`,
  ),
  registerWorker: statement(
    `INSERT INTO workers (token, run_id, host, pid, concurrency, lease_ms, started_at, heartbeat_at,
       state)
     VALUES (@token, @runId, @host, @pid, @concurrency, @leaseMs, ${DB_NOW_ISO}, ${DB_NOW_MS},
       'active')`,
  ),
  // The claim: one statement per batch. SKIP LOCKED passes over rows another claimant (or a
  // fenced commit) holds, so concurrent claims never wait on each other nor get the same key. A
  // lease taken from an expired holder marks that holder lost, so its heartbeat stops it.
  claim: statement(
    `WITH w AS (
       SELECT lease_ms FROM workers WHERE token = @token AND run_id = @runId AND state = 'active'),
     picked AS (
       SELECT sample_id, epoch, token AS old_token FROM leases
       WHERE run_id = @runId AND done = 0 AND EXISTS (SELECT 1 FROM w)
         AND (token IS NULL OR expires_at <= ${DB_NOW_MS})
       ORDER BY epoch, sample_id LIMIT @limit::int FOR UPDATE SKIP LOCKED),
     claimed AS (
       UPDATE leases l SET token = @token, expires_at = ${DB_NOW_MS} + (SELECT lease_ms FROM w),
         claims = l.claims + 1
       FROM picked WHERE l.run_id = @runId AND l.sample_id = picked.sample_id
         AND l.epoch = picked.epoch
       RETURNING l.sample_id, l.epoch, picked.old_token),
     lost AS (
       UPDATE workers SET state = 'lost'
       WHERE run_id = @runId AND state = 'active' AND token <> @token
         AND token IN (SELECT old_token FROM claimed WHERE old_token IS NOT NULL))
     SELECT sample_id, epoch FROM claimed ORDER BY epoch, sample_id`,
  ),
  openCounts: statement(
    `SELECT COUNT(*)::int AS open,
       COUNT(*) FILTER (WHERE token IS NOT NULL AND token <> @token
         AND expires_at > ${DB_NOW_MS})::int AS elsewhere
     FROM leases WHERE run_id = @runId AND done = 0`,
  ),
  // The fence of a worker's write: the leases of its keys, locked until the write commits.
  heldLeases: statement(
    `SELECT l.sample_id FROM leases l
     JOIN workers w ON w.token = l.token AND w.run_id = l.run_id AND w.state = 'active'
     WHERE l.run_id = @runId AND l.token = @token AND l.done = 0 AND l.expires_at > ${DB_NOW_MS}
       AND (l.sample_id, l.epoch) IN (SELECT * FROM unnest(@sampleIds::text[], @epochs::int[]))
     FOR UPDATE OF l`,
  ),
  isWorker: statement(`SELECT 1 FROM workers WHERE token = @token AND run_id = @runId`),
  finish: statement(
    `WITH f AS (
       UPDATE leases SET done = 1 WHERE run_id = @runId AND token = @token AND done = 0
         AND (sample_id, epoch) IN (SELECT * FROM unnest(@sampleIds::text[], @epochs::int[]))
       RETURNING 1)
     UPDATE workers SET keys_done = keys_done + (SELECT COUNT(*) FROM f) WHERE token = @token`,
  ),
  countRejected: statement(`UPDATE workers SET rejected = rejected + 1 WHERE token = @token`),
  // A worker's beat: refused (no rows) once it is no longer active or one of its leases expired.
  beat: statement(
    `WITH me AS (
       SELECT w.token FROM workers w WHERE w.token = @token AND w.run_id = @runId
         AND w.state = 'active' AND NOT EXISTS (
           SELECT 1 FROM leases l WHERE l.run_id = @runId AND l.token = @token AND l.done = 0
             AND l.expires_at <= ${DB_NOW_MS})),
     -- The leases a commit or a settle of this worker holds locked are skipped, not waited for:
     -- the beat waited on them while they waited on the rows it had locked (a deadlock, each a
     -- second's stall, at every beat of a busy worker); a skipped lease is done, or extended by
     -- the next beat, well within its lease time.
     open AS (
       SELECT sample_id, epoch FROM leases
       WHERE run_id = @runId AND token = @token AND done = 0 AND EXISTS (SELECT 1 FROM me)
       FOR UPDATE SKIP LOCKED),
     extended AS (
       UPDATE leases l SET expires_at = ${DB_NOW_MS} + (SELECT lease_ms FROM workers WHERE token = @token)
       FROM open WHERE l.run_id = @runId AND l.sample_id = open.sample_id
         AND l.epoch = open.epoch),
     beat AS (
       UPDATE workers SET heartbeat_at = ${DB_NOW_MS} WHERE token IN (SELECT token FROM me))
     SELECT r.cancel_requested FROM runs r WHERE r.id = @runId AND EXISTS (SELECT 1 FROM me)`,
  ),
  markLost: statement(
    `UPDATE workers SET state = 'lost' WHERE token = @token AND run_id = @runId AND state = 'active'`,
  ),
  release: statement(
    `UPDATE leases SET token = NULL, expires_at = NULL
     WHERE run_id = @runId AND token = @token AND done = 0`,
  ),
  expire: statement(
    `UPDATE leases SET expires_at = ${DB_NOW_MS} - 1
     WHERE run_id = @runId AND token = @token AND done = 0`,
  ),
  setState: statement(
    `UPDATE workers SET state = @state WHERE token = @token AND run_id = @runId
       AND (state = 'active' OR @state = 'lost')`,
  ),
  listWorkers: statement(
    `SELECT *, ${DB_NOW_MS} AS db_now_ms FROM workers WHERE run_id = @runId
     ORDER BY started_at, token`,
  ),
  reopenLeases: statement(
    `UPDATE leases l SET done = 0, token = NULL, expires_at = NULL
     WHERE l.run_id = @runId AND l.done = 1 AND NOT EXISTS (${SCORED_NOW})`,
  ),
  scoredLeases: statement(
    `UPDATE leases l SET done = 1 WHERE l.run_id = @runId AND l.done = 0 AND EXISTS (${SCORED_NOW})`,
  ),
  anyAttempt: statement(`SELECT 1 FROM attempts WHERE run_id = @runId LIMIT 1`),
  reopenRun: statement(
    `UPDATE runs SET status = 'running', note = NULL, cancel_requested = NULL,
       updated_at = ${DB_NOW_ISO}
     WHERE id = @runId AND owner_token IS NULL AND config::jsonb ? 'distributed'`,
  ),
  cancel: statement(
    `UPDATE runs SET cancel_requested = @note
     WHERE id = @runId AND status = 'running' AND owner_token IS NULL
       AND config::jsonb ? 'distributed'`,
  ),
  close: statement(
    `UPDATE runs SET status = @status, note = @note, cancel_requested = NULL,
       updated_at = ${DB_NOW_ISO}
     WHERE id = @runId AND status = 'running' AND owner_token IS NULL
       AND config::jsonb ? 'distributed'
       AND NOT EXISTS (SELECT 1 FROM leases WHERE run_id = @runId AND done = 0
         AND (@final::bool OR (token IS NOT NULL AND expires_at > ${DB_NOW_MS})))`,
  ),
};

type Row = { sample_id: string; epoch: number };

/** The lease half of the PostgreSQL store; the adapter wraps each call in its guard. */
export const postgresLeases = {
  async create(tx: Queryable, runId: string, epochs: number): Promise<void> {
    await sql.insertLeases.run(tx, { runId, epochs });
  },

  async register(db: Queryable, runId: string, worker: WorkerIdentity): Promise<void> {
    const { token, host, pid, concurrency, leaseMs } = worker;
    await sql.registerWorker.run(db, { runId, token, host, pid, concurrency, leaseMs });
  },

  async claim(
    db: Queryable,
    runId: string,
    token: string,
    limit: number,
    count = true,
  ): Promise<LeaseClaim> {
    const rows = await sql.claim.rows<Row>(db, { runId, token, limit });
    const keys = rows.map((r) => ({ sampleId: r.sample_id, epoch: r.epoch }));
    if (!count && keys.length === limit) return { keys };
    const [counts] = await sql.openCounts.rows<{ open: number; elsewhere: number }>(db, {
      runId,
      token,
    });
    return {
      keys,
      open: counts?.open ?? 0,
      leasedElsewhere: counts?.elsewhere ?? 0,
    };
  },

  /**
   * Inside the write's transaction: whether `token` is a worker of the run, and if so that it
   * holds a live lease on every key (rows locked until commit), else `E_FENCED`.
   */
  async fence(tx: Queryable, runId: string, token: string, keys: readonly Key[]): Promise<boolean> {
    const distinct = distinctKeys(keys);
    // Sent together: a token that is no worker's holds no lease, so the second locks nothing.
    const [worker, held] = await Promise.all([
      sql.isWorker.rows(tx, { runId, token }),
      distinct.length === 0
        ? Promise.resolve([])
        : sql.heldLeases.rows(tx, { runId, token, ...columns(distinct) }),
    ]);
    if (worker.length === 0) return false;
    if (held.length !== distinct.length) throw leaseLost(runId, token);
    return true;
  },

  async finish(tx: Queryable, runId: string, token: string, keys: readonly Key[]): Promise<void> {
    if (keys.length === 0) return;
    await sql.finish.run(tx, { runId, token, ...columns(distinctKeys(keys)) });
  },

  async countRejected(db: Queryable, token: string): Promise<void> {
    await sql.countRejected.run(db, { token });
  },

  /** Undefined when `token` is no worker's; else the beat's reply. */
  async heartbeat(db: Queryable, runId: string, token: string) {
    if ((await sql.isWorker.rows(db, { runId, token })).length === 0) return undefined;
    const [row] = await sql.beat.rows<{ cancel_requested: string | null }>(db, { runId, token });
    if (row) return { owned: true as const, cancelRequested: row.cancel_requested };
    await sql.markLost.run(db, { runId, token });
    return { owned: false as const };
  },

  async leave(db: Queryable, runId: string, token: string, state: Exclude<WorkerState, "active">) {
    await sql.release.run(db, { runId, token });
    await sql.setState.run(db, { runId, token, state });
  },

  async expire(db: Queryable, runId: string, token: string): Promise<number> {
    const n = await sql.expire.run(db, { runId, token });
    await sql.setState.run(db, { runId, token, state: "lost" });
    return n;
  },

  async list(db: Queryable, runId: string): Promise<WorkerRecord[]> {
    const rows = await sql.listWorkers.rows<WorkerRow & { db_now_ms: number }>(db, { runId });
    return rows.map((row) => toWorker(row, row.db_now_ms));
  },

  async reopen(tx: Queryable, runId: string): Promise<boolean> {
    if ((await sql.reopenRun.run(tx, { runId })) === 0) return false;
    await sql.reopenLeases.run(tx, { runId });
    // A run without an attempt (one just created, no seed) has no scored key: its open leases
    // are not looked at one by one.
    const attempted = await sql.anyAttempt.rows(tx, { runId });
    if (attempted.length > 0) await sql.scoredLeases.run(tx, { runId });
    return true;
  },

  async cancel(db: Queryable, runId: string, note: string): Promise<boolean> {
    return (await sql.cancel.run(db, { runId, note })) === 1;
  },

  async close(db: Queryable, runId: string, status: RunStatus, note: string | null) {
    const final = status !== "interrupted";
    return (await sql.close.run(db, { runId, status, note, final })) === 1;
  },
};

function columns(keys: readonly Key[]) {
  return { sampleIds: keys.map((k) => k.sampleId), epochs: keys.map((k) => k.epoch) };
}
