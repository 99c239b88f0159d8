import type { SqliteDatabase, SqliteStatement } from "./driver.js";
import { ATTEMPT_INSERT_COLUMNS } from "../attempt-values.js";
import { JOURNAL_SQL, type JournalRow } from "../journal-rows.js";
import {
  ATTEMPT_COLUMNS,
  ATTEMPT_FACT_COLUMNS,
  ATTEMPT_HEAD_COLUMNS,
  type AttemptFactRow,
  type AttemptHeadRow,
  type AttemptRow,
  type SampleRow,
} from "../rows.js";
import type { RunRow } from "../run-rows.js";
import {
  askedRerunsSql,
  openRerunPageSql,
  pruneRerunsSql,
  recordAskedSql,
  RERUN_SQL,
  UPSERT,
  type RerunRow,
} from "../rerun-rows.js";
import { SAMPLE_PAGE_SQL, type RawFingerprintRow, type SamplePageRow } from "../sample-pages.js";
import type { RunHeadRow, UsageRow } from "../report-inputs.js";
import { SCORING_COLUMNS, type ScoringRow } from "../scoring-rows.js";

/** One entry of a statement table: its SQL, the row it selects, and whether rows come as arrays. */
/**
 * A keyset page of a run's attempts as they stand now (`columns` of `attempts_now`): after the
 * cursor (sample id, epoch, attempt), up to the commit `upTo`, in key order.
 */
function attemptsPage(columns: string, bounded = false): string {
  return `SELECT ${columns} FROM attempts_now
         WHERE run_id = @runId AND (sample_id > @sampleId OR (sample_id = @sampleId
           AND (epoch > @epoch OR (epoch = @epoch AND attempt > @attempt))))
           AND seq <= @upTo${bounded ? " AND sample_id <= @last" : ""}
         ORDER BY sample_id, epoch, attempt LIMIT @limit`;
}

export interface Sql<Row> {
  text: string;
  raw: boolean;
  /** Never set: carries the row type to the prepared statement. */
  row?: Row;
}

export function sql<Row = unknown>(text: string): Sql<Row> {
  return { text, raw: false };
}

/** How many rows one multi-row INSERT writes (`valuesRows`, `rowWriter`). */
export const ROWS_PER_STATEMENT = 16;

/** The VALUES of `rows` rows of `width` parameters each: `(?, ?), (?, ?)`. */
export function valuesRows(width: number, rows: number): string {
  const row = `(${Array.from({ length: width }, () => "?").join(", ")})`;
  return Array.from({ length: rows }, () => row).join(", ");
}

/**
 * Writes rows of `width` values as they come, ROWS_PER_STATEMENT to a call of `many` (a call per
 * row cost about as much as the row it wrote), and at `end` those left one by one with `one`.
 * Holds one statement's rows at most: a snapshot of a million samples is never held whole.
 *
 * @example const rows = rowWriter(s.insertSample, s.insertSampleRows, 4); rows.push(a, b, c, d); rows.end();
 */
export function rowWriter(
  one: SqliteStatement<unknown>,
  many: SqliteStatement<unknown>,
  width: number,
): { push(...row: unknown[]): void; end(): void } {
  const chunk = ROWS_PER_STATEMENT * width;
  let values: unknown[] = [];
  return {
    push(...row) {
      values.push(...row);
      if (values.length < chunk) return;
      many.run(...values);
      values = [];
    },
    end() {
      for (let at = 0; at < values.length; at += width) one.run(...values.slice(at, at + width));
      values = [];
    },
  };
}

/** Rows as arrays in SELECT order (`Row` is the matching tuple): what large listings read. */
function rawSql<Row>(text: string): Sql<Row> {
  return { text, raw: true };
}

const CLEAR_OWNER = `owner_host = NULL, owner_pid = NULL, owner_token = NULL, heartbeat_at = NULL,
  cancel_requested = NULL`;

/** A run's attempts (of one sample, one epoch) as they read now, or as they were committed. */
function listAttempts(from: "attempts_now" | "attempts") {
  return rawSql<AttemptRow>(
    `SELECT ${ATTEMPT_COLUMNS} FROM ${from}
     WHERE run_id = @runId AND (@sampleId IS NULL OR sample_id = @sampleId)
       AND (@epoch IS NULL OR epoch = @epoch)
     ORDER BY sample_id, epoch, attempt`,
  );
}

/** Every statement the adapter runs but the journal's, prepared once when the store opens. */
export const SQLITE_STATEMENTS = {
  insertRun: sql(
    `INSERT INTO runs (id, eval_name, status, config, sample_count, created_at, updated_at,
         owner_host, owner_pid, owner_token, heartbeat_at, note, labels)
       VALUES (@id, @evalName, 'running', @config, @sampleCount, @now, @now,
         @host, @pid, @token, @nowMs, NULL, @labels)`,
  ),
  insertSample: sql(
    `INSERT INTO samples (run_id, sample_id, fingerprint, sample) VALUES ${valuesRows(4, 1)}`,
  ),
  // A new run's snapshot, ROWS_PER_STATEMENT samples a statement (`rowWriter`).
  insertSampleRows: sql(
    `INSERT INTO samples (run_id, sample_id, fingerprint, sample)
       VALUES ${valuesRows(4, ROWS_PER_STATEMENT)}`,
  ),
  getRun: sql<RunRow>(`SELECT * FROM runs WHERE id = ?`),
  ownerToken: sql<{ owner_token: string | null }>(`SELECT owner_token FROM runs WHERE id = ?`),
  // Newest first; rowid breaks ties between runs created in the same millisecond.
  listRuns: sql<RunRow>(
    `SELECT * FROM runs
       WHERE (@status IS NULL OR status = @status) AND (@evalName IS NULL OR eval_name = @evalName)
         -- @labels (a JSON object, or NULL for any): every one of its pairs is one of the run's.
         AND (@labels IS NULL OR NOT EXISTS (SELECT 1 FROM json_each(@labels) w
           WHERE NOT EXISTS (SELECT 1 FROM json_each(runs.labels) l
             WHERE l.key = w.key AND l.value = w.value)))
       ORDER BY created_at DESC, rowid DESC LIMIT @limit OFFSET @offset`,
  ),
  // One row per key that has an attempt for the sample's current fingerprint.
  countKeys: sql<{ keys: number; scored: number | null }>(
    `SELECT COUNT(*) AS keys, SUM(scored) AS scored FROM (
         SELECT MAX(a.status = 'scored') AS scored
         FROM attempts_now a
         JOIN samples s ON s.run_id = a.run_id AND s.sample_id = a.sample_id
         WHERE a.run_id = @runId AND a.fingerprint = s.fingerprint AND a.epoch <= @epochs
         GROUP BY a.sample_id, a.epoch)`,
  ),
  listSampleFingerprints: sql<{ sample_id: string; fingerprint: string }>(
    `SELECT sample_id, fingerprint FROM samples WHERE run_id = ? ORDER BY sample_id`,
  ),
  getSamples: sql<SampleRow>(
    `SELECT sample, fingerprint FROM samples WHERE run_id = ? ORDER BY sample_id`,
  ),
  updateSample: sql(
    `UPDATE samples SET fingerprint = ?, sample = ? WHERE run_id = ? AND sample_id = ?`,
  ),
  sampleFingerprint: sql<{ fingerprint: string }>(
    `SELECT fingerprint FROM samples WHERE run_id = ? AND sample_id = ?`,
  ),
  touchRun: sql(`UPDATE runs SET updated_at = ? WHERE id = ?`),

  // The compare-and-set: `IS` matches a NULL expected token against an ownerless run.
  claimRun: sql(
    `UPDATE runs SET owner_host = @host, owner_pid = @pid, owner_token = @token,
         heartbeat_at = @nowMs, status = 'running', note = NULL, updated_at = @now,
         cancel_requested = NULL
       WHERE id = @runId AND owner_token IS @expectedToken
         AND NOT (status = 'running' AND owner_token IS NULL
           AND json_extract(config, '$.distributed') = 1)`,
  ),
  heartbeat: sql<{ cancel_requested: string | null }>(
    `UPDATE runs SET heartbeat_at = @nowMs WHERE id = @runId AND owner_token = @token
       RETURNING cancel_requested`,
  ),
  requestCancel: sql(
    `UPDATE runs SET cancel_requested = @note WHERE id = @runId AND owner_token = @token`,
  ),
  updateRunConfig: sql(
    `UPDATE runs SET config = @config, updated_at = @now WHERE id = @runId AND owner_token = @token`,
  ),
  rerunPage: sql<RerunRow>(RERUN_SQL.page),
  openRerunPage: sql<RerunRow>(openRerunPageSql("sqlite")),
  clearReruns: sql(RERUN_SQL.clear),
  pruneReruns: sql(pruneRerunsSql("sqlite")),
  // @rows: a JSON array of [sample id, epoch, after] rows.
  insertReruns: sql(
    `INSERT INTO rerun_requests (run_id, sample_id, epoch, after_attempt)
     SELECT @runId, json_extract(value, '$[0]'), json_extract(value, '$[1]'),
       json_extract(value, '$[2]') FROM json_each(@rows) WHERE true ${UPSERT}`,
  ),
  askedRerunPage: sql<RerunRow>(askedRerunsSql("sqlite", true)),
  figuresBuilt: sql<{ built: number }>(RERUN_SQL.figuresBuilt),
  recordAsked: sql(recordAskedSql("sqlite")),
  releaseRun: sql(
    `UPDATE runs SET ${CLEAR_OWNER}, status = @status, note = @note, updated_at = @now
       WHERE id = @runId AND owner_token = @token`,
  ),
  interruptOrphan: sql(
    `UPDATE runs SET ${CLEAR_OWNER}, status = 'interrupted', note = @note, updated_at = @now
       WHERE id = @runId AND owner_token = @token`,
  ),

  markInflight: sql(`INSERT OR IGNORE INTO inflight (run_id, sample_id, epoch) VALUES (?, ?, ?)`),
  clearInflight: sql(`DELETE FROM inflight WHERE run_id = ? AND sample_id = ? AND epoch = ?`),
  // What a commit may have to close or move (`LeftOpen`): one read a batch, three run ids bound.
  leftOpen: {
    ...sql<[number, number, number]>(
      `SELECT EXISTS (SELECT 1 FROM inflight WHERE run_id = ?),
         EXISTS (SELECT 1 FROM journal WHERE run_id = ? AND attempt IS NULL),
         EXISTS (SELECT 1 FROM rerun_counts WHERE run_id = ? AND n > 0)`,
    ),
    raw: true,
  },
  listInflight: sql<{ sample_id: string; epoch: number }>(
    `SELECT sample_id, epoch FROM inflight WHERE run_id = ? ORDER BY sample_id, epoch`,
  ),

  // Everything recordAttempts checks about one key, in one round trip. `scored` counts only
  // attempts numbered after `after_attempt`: 0, or a re-run draft's `rerunAfter`.
  // The sample's current fingerprint (NULL: not in the snapshot) and its figures (migration 17)
  // come with the key's state, for the commit's figures, in the same statement.
  // Parameters by position (run, sample, epoch, fingerprint, after), named once in `k`: it runs
  // for every attempt, and better-sqlite3 binds an array faster than an object's names.
  keyState: sql<{
    current: string | null;
    figures: string | null;
    scored: number;
    next: number;
  }>(
    `WITH k (run_id, sample_id, epoch, fingerprint, after_attempt) AS (VALUES (?, ?, ?, ?, ?))
     SELECT
         (SELECT s.fingerprint FROM samples s
           WHERE s.run_id = k.run_id AND s.sample_id = k.sample_id) AS current,
         (SELECT f.figures FROM sample_figures f
           WHERE f.run_id = k.run_id AND f.sample_id = k.sample_id) AS figures,
         EXISTS (SELECT 1 FROM attempts_now a WHERE a.run_id = k.run_id
           AND a.sample_id = k.sample_id AND a.epoch = k.epoch AND a.fingerprint = k.fingerprint
           AND a.status = 'scored' AND a.attempt > k.after_attempt) AS scored,
         (SELECT COALESCE(MAX(a.attempt), 0) + 1 FROM attempts a
           WHERE a.run_id = k.run_id AND a.sample_id = k.sample_id AND a.epoch = k.epoch) AS next
       FROM k`,
  ),
  // Bound by position from `attemptValues`: binding 22 names cost twice as much per attempt.
  insertAttempt: sql(
    `INSERT INTO attempts (${ATTEMPT_INSERT_COLUMNS.join(", ")})
       VALUES ${valuesRows(ATTEMPT_INSERT_COLUMNS.length, 1)}`,
  ),
  scorableAttempt: sql<{ status: string; error: string | null; next: number }>(
    `SELECT a.status, a.error, (SELECT COALESCE(MAX(scoring), 0) + 1 FROM scorings c
           WHERE c.run_id = a.run_id AND c.sample_id = a.sample_id AND c.epoch = a.epoch
             AND c.attempt = a.attempt) AS next
       FROM attempts a WHERE a.run_id = @runId AND a.sample_id = @sampleId AND a.epoch = @epoch
         AND a.attempt = @attempt`,
  ),
  insertScoring: sql(
    `INSERT INTO scorings (run_id, sample_id, epoch, attempt, scoring, pass, status, scores,
         rescored, scorer_config, error, input_tokens, output_tokens, cost_usd, scored_at,
         duration_ms, redacted, retries, usage_detail)
       VALUES (@runId, @sampleId, @epoch, @attempt, @scoring, @pass, @status, @scores,
         @rescored, @scorerConfig, @error, @inputTokens, @outputTokens, @costUsd, @scoredAt,
         @durationMs, @redacted, @retries, @usageDetail)`,
  ),
  listScorings: sql<ScoringRow>(
    `SELECT ${SCORING_COLUMNS} FROM scorings
       WHERE run_id = @runId AND (@sampleId IS NULL OR sample_id = @sampleId)
         AND (@epoch IS NULL OR epoch = @epoch)
         AND (@fromSampleId IS NULL OR sample_id >= @fromSampleId)
         AND (@toSampleId IS NULL OR sample_id <= @toSampleId)
         AND (@pass IS NULL OR pass = @pass)
       ORDER BY sample_id, epoch, attempt, scoring`,
  ),
  listAttempts: listAttempts("attempts_now"),
  listAttemptsAsCommitted: listAttempts("attempts"),
  attemptHeadPage: rawSql<AttemptHeadRow>(attemptsPage(ATTEMPT_HEAD_COLUMNS)),
  attemptFactPage: rawSql<AttemptFactRow>(attemptsPage(ATTEMPT_FACT_COLUMNS)),
  fingerprintPage: rawSql<RawFingerprintRow>(SAMPLE_PAGE_SQL.fingerprints),
  samplePage: sql<SamplePageRow>(SAMPLE_PAGE_SQL.whole),
  sampleIdMark: rawSql<[sample_id: string]>(SAMPLE_PAGE_SQL.mark),
  samplePlace: sql<{ place: number; previous: string | null }>(SAMPLE_PAGE_SQL.place),
  attemptPage: rawSql<AttemptRow>(attemptsPage(ATTEMPT_COLUMNS)),
  // A part of the run's attempts (`RunPart`), up to its last sample id.
  attemptPartPage: rawSql<AttemptRow>(attemptsPage(ATTEMPT_COLUMNS, true)),
  // Several runs at once (`?` is a JSON array of run ids): a listing's figures in three reads.
  reportFingerprints: sql<{ run_id: string; sample_id: string; fingerprint: string }>(
    `SELECT run_id, sample_id, fingerprint FROM samples
       WHERE run_id IN (SELECT value FROM json_each(?))`,
  ),
  reportHeads: rawSql<RunHeadRow>(
    `SELECT run_id, ${ATTEMPT_HEAD_COLUMNS} FROM attempts_now
         WHERE run_id IN (SELECT value FROM json_each(?))
         ORDER BY run_id, sample_id, epoch, attempt`,
  ),
  reportScoringUsage: sql<UsageRow>(
    `SELECT run_id, input_tokens, output_tokens, cost_usd, usage_detail FROM scorings
       WHERE run_id IN (SELECT value FROM json_each(?))
       ORDER BY run_id, sample_id, epoch, attempt, scoring`,
  ),
  listAttemptHeads: rawSql<AttemptHeadRow>(
    `SELECT ${ATTEMPT_HEAD_COLUMNS} FROM attempts_now WHERE run_id = ?
         ORDER BY sample_id, epoch, attempt`,
  ),
  // The samples with a key that has no scored attempt of the snapshot's fingerprint (a resume's
  // open samples), then their heads, `@ids` a JSON array of sample ids.
  openSamples: sql<{ sample_id: string }>(
    `SELECT s.sample_id FROM samples s WHERE s.run_id = @runId AND (
         SELECT COUNT(DISTINCT a.epoch) FROM attempts_now a
         WHERE a.run_id = s.run_id AND a.sample_id = s.sample_id AND a.fingerprint = s.fingerprint
           AND a.status = 'scored' AND a.epoch <= @epochs) < @epochs
       ORDER BY s.sample_id`,
  ),
  // Some samples' ids and fingerprints (an import's), `@ids` a JSON array of sample ids.
  fingerprintsOf: rawSql<RawFingerprintRow>(
    `SELECT sample_id, fingerprint FROM samples
         WHERE run_id = @runId AND sample_id IN (SELECT value FROM json_each(@ids))
         ORDER BY sample_id`,
  ),
  // Some samples' records (a reuse's, of its changed samples), `@ids` a JSON array of sample ids.
  recordsOf: sql<SamplePageRow>(
    `SELECT sample_id, sample, fingerprint FROM samples
         WHERE run_id = @runId AND sample_id IN (SELECT value FROM json_each(@ids))
         ORDER BY sample_id`,
  ),
  sampleHeads: rawSql<AttemptHeadRow>(
    `SELECT ${ATTEMPT_HEAD_COLUMNS} FROM attempts_now
         WHERE run_id = @runId AND sample_id IN (SELECT value FROM json_each(@ids))
         ORDER BY sample_id, epoch, attempt`,
  ),
};

/** The journal's statements (SQL shared with PostgreSQL), prepared on first use. */
export const SQLITE_JOURNAL_STATEMENTS = {
  truncateOpen: sql(JOURNAL_SQL.truncateOpen),
  replaceOpen: sql(JOURNAL_SQL.replaceOpen),
  insert: sql(JOURNAL_SQL.insert),
  bind: sql(JOURNAL_SQL.bind),
  list: sql<JournalRow>(JOURNAL_SQL.list),
  openKeys: sql<{ sample_id: string; epoch: number }>(JOURNAL_SQL.openKeys),
  prune: sql(JOURNAL_SQL.prune),
  pruneScored: sql(JOURNAL_SQL.pruneScored),
};

/** A table of SQL, each entry prepared into a statement of the same name. */
export type Prepared<Table> = {
  [Name in keyof Table]: Table[Name] extends Sql<infer Row> ? SqliteStatement<Row> : never;
};

export type Statements = Prepared<typeof SQLITE_STATEMENTS>;
export type JournalStatements = Prepared<typeof SQLITE_JOURNAL_STATEMENTS>;

/**
 * Prepares every entry of a statement table, in a loop: the table is the one list of what the
 * adapter runs.
 *
 * @example const s = prepareTable(db, SQLITE_STATEMENTS); s.getRun.get("r_1");
 */
export function prepareTable<Table extends Record<string, Sql<unknown>>>(
  db: SqliteDatabase,
  table: Table,
): Prepared<Table> {
  const prepared: Record<string, SqliteStatement<unknown>> = {};
  for (const [name, entry] of Object.entries(table)) {
    const statement = db.prepare(entry.text);
    prepared[name] = entry.raw ? statement.raw() : statement;
  }
  // The loop fills every name of the table with the statement of that entry's row type.
  return prepared as Prepared<Table>;
}
