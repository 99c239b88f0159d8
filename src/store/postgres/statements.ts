import { DB_NOW_ISO, DB_NOW_MS, statement, type Statement } from "./driver.js";
import { ATTEMPT_COLUMNS, ATTEMPT_FACT_COLUMNS, ATTEMPT_HEAD_COLUMNS } from "../rows.js";
import { SCORING_COLUMNS } from "../scoring-rows.js";
import { JOURNAL_COLUMNS, JOURNAL_SQL } from "../journal-rows.js";
import { SAMPLE_PAGE_SQL } from "../sample-pages.js";
import {
  askedRerunsSql,
  openRerunPageSql,
  pruneRerunsSql,
  recordAskedSql,
  RERUN_SQL,
  UPSERT,
} from "../rerun-rows.js";

/** One entry of a statement table: its SQL, and whether it is a named prepared statement. */
interface Sql {
  text: string;
  prepare: boolean;
}

function sql(text: string, options: { prepare?: boolean } = {}): Sql {
  return { text, prepare: options.prepare === true };
}

/**
 * Compiles every entry of a statement table (`@name` parameters to `$n`), in a loop: the table
 * is the one list of what the adapter runs.
 *
 * @example const s = compileTable({ getRun: sql("SELECT * FROM runs WHERE id = @runId") });
 */
function compileTable<Table extends Record<string, Sql>>(
  table: Table,
): Record<keyof Table, Statement> {
  const compiled: Record<string, Statement> = {};
  for (const [name, { text, prepare }] of Object.entries(table)) {
    compiled[name] = statement(text, { prepare });
  }
  // The loop set every name of the table.
  return compiled as Record<keyof Table, Statement>;
}

const CLEAR_OWNER = `owner_host = NULL, owner_pid = NULL, owner_token = NULL, heartbeat_at = NULL,
  cancel_requested = NULL`;

/** A run row with the database clock beside it, so heartbeat ages need no other clock. */
const RUN_COLUMNS = `*, ${DB_NOW_MS} AS db_now_ms`;

/** A run's attempts (of one sample, one epoch) as they read now, or as they were committed. */
function listAttempts(from: "attempts_now" | "attempts") {
  return sql(
    `SELECT ${ATTEMPT_COLUMNS} FROM ${from}
     WHERE run_id = @runId AND (@sampleId::text IS NULL OR sample_id = @sampleId)
       AND (@epoch::int IS NULL OR epoch = @epoch)
     ORDER BY sample_id, epoch, attempt`,
  );
}

/**
 * Every statement the PostgreSQL adapter runs: the SQLite adapter's, in PostgreSQL's dialect.
 * Times come from the database server's clock (see DB_NOW_MS).
 */
const POSTGRES_SQL = {
  insertRun: sql(
    `INSERT INTO runs (id, eval_name, status, config, sample_count, created_at, updated_at,
       owner_host, owner_pid, owner_token, heartbeat_at, note, labels)
     VALUES (@id, @evalName, 'running', @config, @sampleCount, ${DB_NOW_ISO}, ${DB_NOW_ISO},
       @host, @pid, @token, ${DB_NOW_MS}, NULL, @labels)
     ON CONFLICT (id) DO NOTHING`,
  ),
  // One statement for the whole snapshot: a 100,000-sample run is one round trip, not 100,000.
  insertSamples: sql(
    `INSERT INTO samples (run_id, sample_id, fingerprint, sample)
     SELECT @runId::text, u.sample_id, u.fingerprint, u.sample
     FROM unnest(@ids::text[], @fingerprints::text[], @samples::text[])
       AS u(sample_id, fingerprint, sample)`,
  ),
  getRun: sql(`SELECT ${RUN_COLUMNS} FROM runs WHERE id = @runId`),
  // The fence. The run's row stays locked until the transaction ends, so the owner it read cannot
  // change before the writes that depend on it commit, and the run's writers commit one after
  // another. NO KEY UPDATE, not UPDATE: it conflicts with every other writer's lock and with an
  // UPDATE of the row, but not with the KEY SHARE lock that inserting a row referencing the run
  // takes. Two workers that each inserted journal entries before taking it would otherwise wait
  // for each other's KEY SHARE: a deadlock.
  lockOwner: sql(`SELECT owner_token FROM runs WHERE id = @runId FOR NO KEY UPDATE`),
  readOwner: sql(
    `SELECT owner_token, config::jsonb ? 'distributed' AS distributed FROM runs WHERE id = @runId`,
  ),
  listRuns: sql(
    `SELECT ${RUN_COLUMNS} FROM runs
     WHERE (@status::text IS NULL OR status = @status) AND (@evalName::text IS NULL OR eval_name = @evalName)
       -- @labels (a JSON object, or NULL for any): every one of its pairs is one of the run's.
       AND (@labels::text IS NULL OR (labels IS NOT NULL AND labels::jsonb @> @labels::jsonb))
     ORDER BY created_at DESC, seq DESC LIMIT @limit::int OFFSET @offset::int`,
    { prepare: true },
  ),
  countKeys: sql(
    `SELECT COUNT(*)::int AS keys, COALESCE(SUM(scored), 0)::int AS scored FROM (
       SELECT MAX(CASE WHEN a.status = 'scored' THEN 1 ELSE 0 END) AS scored
       FROM attempts_now a
       JOIN samples s ON s.run_id = a.run_id AND s.sample_id = a.sample_id
       WHERE a.run_id = @runId AND a.fingerprint = s.fingerprint AND a.epoch <= @epochs
       GROUP BY a.sample_id, a.epoch) AS keyed`,
  ),
  listSampleFingerprints: sql(
    `SELECT sample_id, fingerprint FROM samples WHERE run_id = @runId ORDER BY sample_id`,
  ),
  getSamples: sql(
    `SELECT sample, fingerprint FROM samples WHERE run_id = @runId ORDER BY sample_id`,
  ),
  updateSample: sql(
    `UPDATE samples SET fingerprint = @fingerprint, sample = @sample
     WHERE run_id = @runId AND sample_id = @sampleId`,
  ),
  touchRun: sql(`UPDATE runs SET updated_at = ${DB_NOW_ISO} WHERE id = @runId`),

  // The compare-and-set. Under READ COMMITTED a competing claim waits for this row's lock, then
  // re-checks the token on the committed row and changes nothing.
  claimRun: sql(
    `UPDATE runs SET owner_host = @host, owner_pid = @pid, owner_token = @token,
       heartbeat_at = ${DB_NOW_MS}, status = 'running', note = NULL, updated_at = ${DB_NOW_ISO},
       cancel_requested = NULL
     WHERE id = @runId AND owner_token IS NOT DISTINCT FROM @expectedToken::text
       AND NOT (status = 'running' AND owner_token IS NULL AND config::jsonb ? 'distributed')`,
  ),
  heartbeat: sql(
    `UPDATE runs SET heartbeat_at = ${DB_NOW_MS} WHERE id = @runId AND owner_token = @token
     RETURNING cancel_requested`,
    { prepare: true },
  ),
  requestCancel: sql(
    `UPDATE runs SET cancel_requested = @note WHERE id = @runId AND owner_token = @token`,
  ),
  updateRunConfig: sql(
    `UPDATE runs SET config = @config, updated_at = ${DB_NOW_ISO}
     WHERE id = @runId AND owner_token = @token`,
  ),
  rerunPage: sql(RERUN_SQL.page),
  openRerunPage: sql(openRerunPageSql("postgres")),
  clearReruns: sql(RERUN_SQL.clear),
  pruneReruns: sql(pruneRerunsSql("postgres")),
  insertReruns: sql(
    `INSERT INTO rerun_requests (run_id, sample_id, epoch, after_attempt)
     SELECT @runId, * FROM unnest(@ids::text[], @epochs::int[], @afters::int[]) ${UPSERT}`,
  ),
  askedRerunPage: sql(askedRerunsSql("postgres", true)),
  recordAsked: sql(recordAskedSql("postgres")),
  figuresBuilt: sql(RERUN_SQL.figuresBuilt),
  releaseRun: sql(
    `UPDATE runs SET ${CLEAR_OWNER}, status = @status, note = @note, updated_at = ${DB_NOW_ISO}
     WHERE id = @runId AND owner_token = @token`,
  ),
  interruptOrphan: sql(
    `UPDATE runs SET ${CLEAR_OWNER}, status = 'interrupted', note = @note, updated_at = ${DB_NOW_ISO}
     WHERE id = @runId AND owner_token = @token`,
  ),

  // Marks the keys whose sample is in the snapshot, and names one that is not (if any): one
  // round trip for a batch. Duplicate keys are harmless (DO NOTHING).
  // Each key's sample looked up by its primary key (joined, the plan read every sample of the run).
  markInflight: sql(
    `WITH k AS (
         SELECT k.sample_id, k.epoch, (SELECT true FROM samples s
           WHERE s.run_id = @runId AND s.sample_id = k.sample_id COLLATE "C") AS known
         FROM unnest(@sampleIds::text[], @epochs::int[]) AS k(sample_id, epoch)),
       marked AS (
         INSERT INTO inflight (run_id, sample_id, epoch)
         SELECT @runId, sample_id, epoch FROM k WHERE known ON CONFLICT DO NOTHING)
     SELECT k.sample_id AS "sampleId" FROM k WHERE known IS NULL LIMIT 1`,
    { prepare: true },
  ),
  // The first of `sampleIds` the run's snapshot does not have (a primary-key lookup each): what a
  // pipelined commit reads before its writes, where markInflight's own answer comes after COMMIT.
  missingSample: sql(
    `SELECT k.sample_id AS "sampleId" FROM unnest(@sampleIds::text[]) AS k(sample_id)
     WHERE (SELECT true FROM samples s
            WHERE s.run_id = @runId AND s.sample_id = k.sample_id COLLATE "C") IS NULL
     LIMIT 1`,
    { prepare: true },
  ),
  listInflight: sql(
    `SELECT sample_id, epoch FROM inflight WHERE run_id = @runId ORDER BY sample_id, epoch`,
  ),

  // Everything recordAttempts checks about each key of a batch, in one round trip, in order.
  // `scored` counts only attempts numbered after k.after: 0, or a re-run draft's `rerunAfter`.
  // `inSnapshot` is a scalar subquery, a primary-key lookup per key: as an EXISTS, the planner
  // hashed every sample of the run instead (20 ms a commit at 20,000 samples, growing with them).
  keyStates: sql(
    `SELECT
       (SELECT true FROM samples s WHERE s.run_id = @runId AND s.sample_id = k.sample_id COLLATE "C")
         IS NOT NULL AS "inSnapshot",
       EXISTS (SELECT 1 FROM attempts_now a WHERE a.run_id = @runId AND a.sample_id = k.sample_id
         AND a.epoch = k.epoch AND a.fingerprint = k.fingerprint AND a.status = 'scored'
         AND a.attempt > k.after) AS scored,
       (SELECT COALESCE(MAX(a.attempt), 0) + 1 FROM attempts a
         WHERE a.run_id = @runId AND a.sample_id = k.sample_id AND a.epoch = k.epoch) AS next
     FROM unnest(@sampleIds::text[], @epochs::int[], @fingerprints::text[], @afters::int[])
       WITH ORDINALITY AS k(sample_id, epoch, fingerprint, after, ord)
     ORDER BY k.ord`,
    { prepare: true },
  ),
  // A batch of attempts, one array per column (see attemptColumns), and the clearing of their
  // keys' in-flight marks: one round trip.
  insertAttempts: sql(
    `WITH inserted AS (
       INSERT INTO attempts (run_id, sample_id, epoch, attempt, status, fingerprint, output, scores,
         input_tokens, output_tokens, cost_usd, transcript, error, started_at, completed_at,
         duration_ms, provenance_kind, provenance_source, redacted, retries, usage_detail,
         limit_hit)
       SELECT @runId::text, * FROM unnest(@sampleId::text[], @epoch::int[], @attempt::int[],
         @status::text[], @fingerprint::text[], @output::text[], @scores::text[],
         @inputTokens::float8[], @outputTokens::float8[], @costUsd::float8[], @transcript::text[],
         @error::text[], @startedAt::text[], @completedAt::text[], @durationMs::float8[],
         @provenanceKind::text[], @provenanceSource::text[], @redacted::text[],
         @retries::int[], @usageDetail::text[], @limitHit::text[]))
     DELETE FROM inflight WHERE run_id = @runId
       AND (sample_id, epoch) IN (SELECT * FROM unnest(@sampleId::text[], @epoch::int[]))`,
    { prepare: true },
  ),
  scorableAttempt: sql(
    `SELECT a.status, a.error, (SELECT COALESCE(MAX(c.scoring), 0) + 1 FROM scorings c
         WHERE c.run_id = a.run_id AND c.sample_id = a.sample_id AND c.epoch = a.epoch
           AND c.attempt = a.attempt)::int AS next
     FROM attempts a WHERE a.run_id = @runId AND a.sample_id = @sampleId AND a.epoch = @epoch::int
       AND a.attempt = @attempt::int`,
    { prepare: true },
  ),
  insertScoring: sql(
    `INSERT INTO scorings (run_id, sample_id, epoch, attempt, scoring, pass, status, scores,
       rescored, scorer_config, error, input_tokens, output_tokens, cost_usd, scored_at,
       duration_ms, redacted, retries, usage_detail)
     VALUES (@runId, @sampleId, @epoch::int, @attempt::int, @scoring::int, @pass, @status,
       @scores, @rescored, @scorerConfig, @error, @inputTokens::float8, @outputTokens::float8,
       @costUsd::float8, @scoredAt, @durationMs::float8, @redacted, @retries::int, @usageDetail)`,
    { prepare: true },
  ),
  listScorings: sql(
    `SELECT ${SCORING_COLUMNS} FROM scorings
     WHERE run_id = @runId AND (@sampleId::text IS NULL OR sample_id = @sampleId)
       AND (@epoch::int IS NULL OR epoch = @epoch)
       AND (@fromSampleId::text IS NULL OR sample_id >= @fromSampleId::text)
       AND (@toSampleId::text IS NULL OR sample_id <= @toSampleId::text)
       AND (@pass::text IS NULL OR pass = @pass::text)
     ORDER BY sample_id, epoch, attempt, scoring`,
  ),
  listAttempts: listAttempts("attempts_now"),
  listAttemptsAsCommitted: listAttempts("attempts"),
  attemptHeadPage: sql(attemptsPage(ATTEMPT_HEAD_COLUMNS)),
  attemptFactPage: sql(attemptsPage(ATTEMPT_FACT_COLUMNS)),
  fingerprintPage: sql(SAMPLE_PAGE_SQL.fingerprints),
  samplePage: sql(SAMPLE_PAGE_SQL.whole),
  sampleIdMark: sql(SAMPLE_PAGE_SQL.mark),
  samplePlace: sql(SAMPLE_PAGE_SQL.place),
  attemptPage: sql(attemptsPage(ATTEMPT_COLUMNS)),
  // A part of the run's attempts (`RunPart`), up to its last sample id.
  attemptPartPage: sql(attemptsPage(ATTEMPT_COLUMNS, true)),
  // Several runs at once: a listing's figures in three reads, not three per run.
  reportFingerprints: sql(
    `SELECT run_id, sample_id, fingerprint FROM samples WHERE run_id = ANY(@runIds::text[])`,
  ),
  reportHeads: sql(
    `SELECT run_id, ${ATTEMPT_HEAD_COLUMNS} FROM attempts_now WHERE run_id = ANY(@runIds::text[])
     ORDER BY run_id, sample_id, epoch, attempt`,
  ),
  reportScoringUsage: sql(
    `SELECT run_id, input_tokens, output_tokens, cost_usd, usage_detail FROM scorings
     WHERE run_id = ANY(@runIds::text[]) ORDER BY run_id, sample_id, epoch, attempt, scoring`,
  ),
  listAttemptHeads: sql(
    `SELECT ${ATTEMPT_HEAD_COLUMNS} FROM attempts_now WHERE run_id = @runId
     ORDER BY sample_id, epoch, attempt`,
  ),
  // The samples with a key that has no scored attempt of the snapshot's fingerprint (a resume's
  // open samples), then their heads.
  openSamples: sql(
    `SELECT s.sample_id FROM samples s WHERE s.run_id = @runId AND (
         SELECT COUNT(DISTINCT a.epoch) FROM attempts_now a
         WHERE a.run_id = s.run_id AND a.sample_id = s.sample_id AND a.fingerprint = s.fingerprint
           AND a.status = 'scored' AND a.epoch <= @epochs::int) < @epochs::int
       ORDER BY s.sample_id`,
  ),
  // Some samples' ids and fingerprints (an import's).
  fingerprintsOf: sql(
    `SELECT sample_id, fingerprint FROM samples
     WHERE run_id = @runId AND sample_id = ANY(@ids::text[])
     ORDER BY sample_id`,
  ),
  // Some samples' records (a reuse's, of its changed samples).
  recordsOf: sql(
    `SELECT sample_id, sample, fingerprint FROM samples
     WHERE run_id = @runId AND sample_id = ANY(@ids::text[])
     ORDER BY sample_id`,
  ),
  sampleHeads: sql(
    `SELECT ${ATTEMPT_HEAD_COLUMNS} FROM attempts_now
     WHERE run_id = @runId AND sample_id = ANY(@ids::text[])
     ORDER BY sample_id, epoch, attempt`,
  ),
};

/** The journal's statements (SQL shared with SQLite, parameters typed for PostgreSQL). */
const POSTGRES_JOURNAL_SQL = {
  dropOpen: sql(
    `DELETE FROM journal j
       USING unnest(@sampleIds::text[], @epochs::int[], @steps::int[], @after::bool[])
         AS d(sample_id, epoch, step, after)
      WHERE j.run_id = @runId AND j.attempt IS NULL AND j.sample_id = d.sample_id
        AND j.epoch = d.epoch AND (j.step = d.step OR (d.after AND j.step >= d.step))`,
    { prepare: true },
  ),
  insertMany: sql(
    `INSERT INTO journal (run_id, attempt, ${JOURNAL_COLUMNS.replace("attempt, ", "")})
     SELECT @runId, NULL, * FROM unnest(@sampleId::text[], @epoch::int[], @step::int[],
       @name::text[], @kind::text[], @inputHash::text[], @input::text[], @result::text[],
       @error::text[], @inputTokens::float8[], @outputTokens::float8[], @costUsd::float8[],
       @recordedAt::text[], @durationMs::float8[], @redacted::text[], @usageDetail::text[],
       @prefixStep::int[], @prefixCount::int[])`,
    { prepare: true },
  ),
  /** One statement per batch: a key's open entries become its stored attempt's. */
  bind: sql(
    `UPDATE journal j SET attempt = b.attempt
       FROM unnest(@sampleIds::text[], @epochs::int[], @attempts::int[]) AS b(sample_id, epoch, attempt)
      WHERE j.run_id = @runId AND j.sample_id = b.sample_id AND j.epoch = b.epoch
        AND j.attempt IS NULL`,
    { prepare: true },
  ),
  list: sql(JOURNAL_SQL.listPostgres),
  openKeys: sql(JOURNAL_SQL.openKeys),
  prune: sql(JOURNAL_SQL.prune),
  pruneScored: sql(JOURNAL_SQL.pruneScored),
};

/**
 * A keyset page of a run's attempts as they stand now (`columns` of `attempts_now`): after the
 * cursor (sample id, epoch, attempt), up to the commit `upTo`, in key order.
 */
function attemptsPage(columns: string, bounded = false): string {
  return `SELECT ${columns} FROM attempts_now
     WHERE run_id = @runId AND (sample_id, epoch, attempt) > (@sampleId::text, @epoch::int, @attempt::int)
       AND seq <= @upTo::bigint${bounded ? " AND sample_id <= @last::text" : ""}
     ORDER BY sample_id, epoch, attempt LIMIT @limit::int`;
}

export const postgresStatements = compileTable(POSTGRES_SQL);
export const postgresJournalStatements = compileTable(POSTGRES_JOURNAL_SQL);
