import type { SqliteDatabase } from "./sqlite-driver.js";
import {
  ATTEMPT_COLUMNS,
  ATTEMPT_HEAD_COLUMNS,
  type AttemptHeadRow,
  type AttemptRow,
  type RunRow,
  type SampleRow,
} from "./rows.js";
import type { RunHeadRow, UsageRow } from "./report-inputs.js";
import { SCORING_COLUMNS, type ScoringRow } from "./scoring-rows.js";

const CLEAR_OWNER = `owner_host = NULL, owner_pid = NULL, owner_token = NULL, heartbeat_at = NULL,
  cancel_requested = NULL`;

/** Every statement the adapter runs, prepared once when the store opens. */
export function prepareStatements(db: SqliteDatabase) {
  return { ...runStatements(db), ...attemptStatements(db) };
}

/** A run's row, its samples' snapshot, its ownership and its keys in flight. */
function runStatements(db: SqliteDatabase) {
  return {
    insertRun: db.prepare(
      `INSERT INTO runs (id, eval_name, status, config, sample_count, created_at, updated_at,
         owner_host, owner_pid, owner_token, heartbeat_at, note)
       VALUES (@id, @evalName, 'running', @config, @sampleCount, @now, @now,
         @host, @pid, @token, @nowMs, NULL)`,
    ),
    insertSample: db.prepare(
      `INSERT INTO samples (run_id, sample_id, fingerprint, sample) VALUES (?, ?, ?, ?)`,
    ),
    getRun: db.prepare<RunRow>(`SELECT * FROM runs WHERE id = ?`),
    ownerToken: db.prepare<{ owner_token: string | null }>(
      `SELECT owner_token FROM runs WHERE id = ?`,
    ),
    // Newest first; rowid breaks ties between runs created in the same millisecond.
    listRuns: db.prepare<RunRow>(
      `SELECT * FROM runs
       WHERE (@status IS NULL OR status = @status) AND (@evalName IS NULL OR eval_name = @evalName)
       ORDER BY created_at DESC, rowid DESC LIMIT @limit OFFSET @offset`,
    ),
    // One row per key that has an attempt for the sample's current fingerprint.
    countKeys: db.prepare<{ keys: number; scored: number | null }>(
      `SELECT COUNT(*) AS keys, SUM(scored) AS scored FROM (
         SELECT MAX(a.status = 'scored') AS scored
         FROM attempts_now a
         JOIN samples s ON s.run_id = a.run_id AND s.sample_id = a.sample_id
         WHERE a.run_id = @runId AND a.fingerprint = s.fingerprint AND a.epoch <= @epochs
         GROUP BY a.sample_id, a.epoch)`,
    ),
    listSampleFingerprints: db.prepare<{ sample_id: string; fingerprint: string }>(
      `SELECT sample_id, fingerprint FROM samples WHERE run_id = ? ORDER BY sample_id`,
    ),
    getSamples: db.prepare<SampleRow>(
      `SELECT sample, fingerprint FROM samples WHERE run_id = ? ORDER BY sample_id`,
    ),
    updateSample: db.prepare(
      `UPDATE samples SET fingerprint = ?, sample = ? WHERE run_id = ? AND sample_id = ?`,
    ),
    sampleFingerprint: db.prepare<{ fingerprint: string }>(
      `SELECT fingerprint FROM samples WHERE run_id = ? AND sample_id = ?`,
    ),
    touchRun: db.prepare(`UPDATE runs SET updated_at = ? WHERE id = ?`),

    // The compare-and-set: `IS` matches a NULL expected token against an ownerless run.
    claimRun: db.prepare(
      `UPDATE runs SET owner_host = @host, owner_pid = @pid, owner_token = @token,
         heartbeat_at = @nowMs, status = 'running', note = NULL, updated_at = @now,
         cancel_requested = NULL
       WHERE id = @runId AND owner_token IS @expectedToken
         AND NOT (status = 'running' AND owner_token IS NULL
           AND json_extract(config, '$.distributed') = 1)`,
    ),
    heartbeat: db.prepare<{ cancel_requested: string | null }>(
      `UPDATE runs SET heartbeat_at = @nowMs WHERE id = @runId AND owner_token = @token
       RETURNING cancel_requested`,
    ),
    requestCancel: db.prepare(
      `UPDATE runs SET cancel_requested = @note WHERE id = @runId AND owner_token = @token`,
    ),
    updateRunConfig: db.prepare(
      `UPDATE runs SET config = @config, updated_at = @now WHERE id = @runId AND owner_token = @token`,
    ),
    releaseRun: db.prepare(
      `UPDATE runs SET ${CLEAR_OWNER}, status = @status, note = @note, updated_at = @now
       WHERE id = @runId AND owner_token = @token`,
    ),
    interruptOrphan: db.prepare(
      `UPDATE runs SET ${CLEAR_OWNER}, status = 'interrupted', note = @note, updated_at = @now
       WHERE id = @runId AND owner_token = @token`,
    ),

    markInflight: db.prepare(
      `INSERT OR IGNORE INTO inflight (run_id, sample_id, epoch) VALUES (?, ?, ?)`,
    ),
    clearInflight: db.prepare(
      `DELETE FROM inflight WHERE run_id = ? AND sample_id = ? AND epoch = ?`,
    ),
    listInflight: db.prepare<{ sample_id: string; epoch: number }>(
      `SELECT sample_id, epoch FROM inflight WHERE run_id = ? ORDER BY sample_id, epoch`,
    ),
  };
}

/** Attempts and scorings: what a commit checks and writes, and every read of them. */
function attemptStatements(db: SqliteDatabase) {
  // A run's attempts (of one sample, one epoch) as they read now, or as they were committed.
  const listAttempts = (from: "attempts_now" | "attempts") =>
    db
      .prepare<AttemptRow>(
        `SELECT ${ATTEMPT_COLUMNS} FROM ${from}
         WHERE run_id = @runId AND (@sampleId IS NULL OR sample_id = @sampleId)
           AND (@epoch IS NULL OR epoch = @epoch)
         ORDER BY sample_id, epoch, attempt`,
      )
      .raw();
  return {
    // Everything recordAttempts checks about one key, in one round trip. `scored` counts only
    // attempts numbered after @after: 0, or a re-run draft's `rerunAfter`.
    keyState: db.prepare<{ inSnapshot: number; scored: number; next: number }>(
      `SELECT
         EXISTS (SELECT 1 FROM samples WHERE run_id = @runId AND sample_id = @sampleId) AS inSnapshot,
         EXISTS (SELECT 1 FROM attempts_now WHERE run_id = @runId AND sample_id = @sampleId
           AND epoch = @epoch AND fingerprint = @fingerprint AND status = 'scored'
           AND attempt > @after) AS scored,
         (SELECT COALESCE(MAX(attempt), 0) + 1 FROM attempts
           WHERE run_id = @runId AND sample_id = @sampleId AND epoch = @epoch) AS next`,
    ),
    insertAttempt: db.prepare(
      `INSERT INTO attempts (run_id, sample_id, epoch, attempt, status, fingerprint, output, scores,
         input_tokens, output_tokens, cost_usd, transcript, error, started_at, completed_at,
         duration_ms, provenance_kind, provenance_source, redacted, retries, usage_detail)
       VALUES (@runId, @sampleId, @epoch, @attempt, @status, @fingerprint, @output, @scores,
         @inputTokens, @outputTokens, @costUsd, @transcript, @error, @startedAt, @completedAt,
         @durationMs, @provenanceKind, @provenanceSource, @redacted, @retries, @usageDetail)`,
    ),
    scorableAttempt: db.prepare<{ status: string; error: string | null; next: number }>(
      `SELECT a.status, a.error, (SELECT COALESCE(MAX(scoring), 0) + 1 FROM scorings c
           WHERE c.run_id = a.run_id AND c.sample_id = a.sample_id AND c.epoch = a.epoch
             AND c.attempt = a.attempt) AS next
       FROM attempts a WHERE a.run_id = @runId AND a.sample_id = @sampleId AND a.epoch = @epoch
         AND a.attempt = @attempt`,
    ),
    insertScoring: db.prepare(
      `INSERT INTO scorings (run_id, sample_id, epoch, attempt, scoring, pass, status, scores,
         rescored, scorer_config, error, input_tokens, output_tokens, cost_usd, scored_at,
         duration_ms, redacted, retries, usage_detail)
       VALUES (@runId, @sampleId, @epoch, @attempt, @scoring, @pass, @status, @scores,
         @rescored, @scorerConfig, @error, @inputTokens, @outputTokens, @costUsd, @scoredAt,
         @durationMs, @redacted, @retries, @usageDetail)`,
    ),
    listScorings: db.prepare<ScoringRow>(
      `SELECT ${SCORING_COLUMNS} FROM scorings
       WHERE run_id = @runId AND (@sampleId IS NULL OR sample_id = @sampleId)
         AND (@epoch IS NULL OR epoch = @epoch)
       ORDER BY sample_id, epoch, attempt, scoring`,
    ),
    listAttempts: listAttempts("attempts_now"),
    listAttemptsAsCommitted: listAttempts("attempts"),
    attemptHeadPage: db
      .prepare<AttemptHeadRow>(
        `SELECT ${ATTEMPT_HEAD_COLUMNS} FROM attempts_now
         WHERE run_id = @runId AND (sample_id > @sampleId OR (sample_id = @sampleId
           AND (epoch > @epoch OR (epoch = @epoch AND attempt > @attempt))))
         ORDER BY sample_id, epoch, attempt LIMIT @limit`,
      )
      .raw(),
    // Several runs at once (`?` is a JSON array of run ids): a listing's figures in three reads.
    reportFingerprints: db.prepare<{ run_id: string; sample_id: string; fingerprint: string }>(
      `SELECT run_id, sample_id, fingerprint FROM samples
       WHERE run_id IN (SELECT value FROM json_each(?))`,
    ),
    reportHeads: db
      .prepare<RunHeadRow>(
        `SELECT run_id, ${ATTEMPT_HEAD_COLUMNS} FROM attempts_now
         WHERE run_id IN (SELECT value FROM json_each(?))
         ORDER BY run_id, sample_id, epoch, attempt`,
      )
      .raw(),
    reportScoringUsage: db.prepare<UsageRow>(
      `SELECT run_id, input_tokens, output_tokens, cost_usd, usage_detail FROM scorings
       WHERE run_id IN (SELECT value FROM json_each(?))
       ORDER BY run_id, sample_id, epoch, attempt, scoring`,
    ),
    listAttemptHeads: db
      .prepare<AttemptHeadRow>(
        `SELECT ${ATTEMPT_HEAD_COLUMNS} FROM attempts_now WHERE run_id = ?
         ORDER BY sample_id, epoch, attempt`,
      )
      .raw(),
  };
}

export type Statements = ReturnType<typeof prepareStatements>;
