import type { SqliteDatabase } from "./driver.js";
import {
  ATTEMPT_HEAD_COLUMNS,
  attemptMapper,
  feedPage,
  outcomeParams,
  toOutcomeEntry,
  type AttemptHeadRow,
  type OutcomeRow,
} from "../rows.js";
import { SPEND_START, toStoredSpend, type SpendRow } from "../spend-rows.js";
import type {
  AttemptFeed,
  BenchmarkSummary,
  OutcomeFilter,
  OutcomePage,
  SpendCursor,
  StoredSpend,
} from "../types.js";

/** Scores of the outcome (of `@scorer` when given) that have a value. */
const VALUED_SCORES = `SELECT 1 FROM json_each(o.scores) j
  WHERE (@scorer IS NULL OR json_extract(j.value, '$.scorer') = @scorer)
    AND json_extract(j.value, '$.value') IS NOT NULL`;

/**
 * The outcome attempt's columns as `attempts_now` gives them (its latest scoring's status, scores
 * and error over the attempt's own), from `attempts a` and `scorings c` joined by their keys. Not
 * a join with the view itself: SQLite cannot push the join's terms into it, and with a LIMIT it
 * scanned the whole view for each key (a filtered page of a 20,000-key run took 50 s).
 */
const OUTCOME_ATTEMPT = `a.sample_id, a.epoch, a.attempt, COALESCE(c.status, a.status) AS status,
  a.fingerprint, a.output, COALESCE(c.scores, a.scores) AS scores, a.input_tokens,
  a.output_tokens, a.cost_usd, CASE WHEN c.seq IS NULL THEN a.error ELSE c.error END AS error,
  a.started_at, a.completed_at, a.duration_ms, a.provenance_kind, a.provenance_source,
  a.redacted, a.retries, a.usage_detail, a.limit_hit`;

/**
 * Every key of a run (snapshot × epochs) with its outcome attempt: the latest scored attempt for
 * the sample's fingerprint, else the latest error for it (as selectOutcomes in core decides).
 */
const OUTCOMES = `WITH RECURSIVE epochs(epoch) AS (
    SELECT 1 UNION ALL SELECT epoch + 1 FROM epochs WHERE epoch < @epochs
  ),
  keyed AS (
    SELECT s.sample_id AS k_sample_id, e.epoch AS k_epoch, s.fingerprint AS k_fingerprint,
      s.sample AS k_sample,
      (SELECT a.attempt FROM attempts_now a
        WHERE a.run_id = s.run_id AND a.sample_id = s.sample_id AND a.epoch = e.epoch
          AND a.fingerprint = s.fingerprint
        ORDER BY a.status = 'scored' DESC, a.attempt DESC LIMIT 1) AS k_outcome,
      (SELECT COUNT(*) FROM attempts a
        WHERE a.run_id = s.run_id AND a.sample_id = s.sample_id AND a.epoch = e.epoch) AS k_attempts
    FROM samples s CROSS JOIN epochs e
    WHERE s.run_id = @runId AND %SAMPLE%
  ),
  o AS (
    SELECT k.*, COALESCE(c.status, a.status, 'pending') AS k_status, ${OUTCOME_ATTEMPT}
    FROM keyed k LEFT JOIN attempts a ON a.run_id = @runId AND a.sample_id = k.k_sample_id
      AND a.epoch = k.k_epoch AND a.attempt = k.k_outcome
    LEFT JOIN scorings c ON c.run_id = a.run_id AND c.sample_id = a.sample_id
      AND c.epoch = a.epoch AND c.attempt = a.attempt
      AND c.scoring = (SELECT MAX(m.scoring) FROM scorings m WHERE m.run_id = a.run_id
        AND m.sample_id = a.sample_id AND m.epoch = a.epoch AND m.attempt = a.attempt)
  )
  SELECT %COLUMNS% FROM o
  WHERE (@status IS NULL OR o.k_status = @status)
    AND (@scorer IS NULL OR EXISTS (${VALUED_SCORES}))
    AND (@result IS NULL OR (o.k_status = 'scored' AND CASE @result
      WHEN 'fail' THEN EXISTS (${VALUED_SCORES} AND json_extract(j.value, '$.value') < 1)
      ELSE EXISTS (${VALUED_SCORES})
        AND NOT EXISTS (${VALUED_SCORES} AND json_extract(j.value, '$.value') < 1) END))
    AND (@search IS NULL OR instr(
      lower(o.k_sample_id || char(10) || o.k_sample || char(10) || COALESCE(o.output, '')),
      lower(@search)) > 0)`;

/** The outcomes of `sample` (a condition on the snapshot's `s`) as `columns`. */
const outcomes = (columns: string, sample: string) =>
  OUTCOMES.replace("%COLUMNS%", columns).replace("%SAMPLE%", sample);

/**
 * A page of outcomes (`@limit` from `@offset`) of the samples `sample` selects, in key order.
 *
 * @example db.prepare(outcomePageSql("s.sample_id = @sampleId"))
 */
export function outcomePageSql(sample: string): string {
  const columns = `o.k_sample_id, o.k_epoch, o.k_fingerprint, o.k_sample, o.k_attempts,
    ${ATTEMPT_HEAD_COLUMNS}, output`;
  return `${outcomes(columns, sample)} ORDER BY o.k_sample_id, o.k_epoch LIMIT @limit OFFSET @offset`;
}

/**
 * The SQLite side of the store's read model for the API and UI: paged outcomes with filters, an
 * attempt feed in commit order, and benchmark summaries.
 *
 * @example const read = prepareReadModel(db); read.listOutcomes(runId, 2, { status: "error" });
 */
export function prepareReadModel(db: SqliteDatabase) {
  const EVERY = "(@sampleId IS NULL OR s.sample_id = @sampleId)";
  const ONE = "s.sample_id = @sampleId";
  // Of one sample, or of every one: SQLite uses the snapshot's key only when no
  // `@sampleId IS NULL OR …` hides `sample_id = @sampleId` (one sample of 200,000 in 1.3 ms).
  const pageOf = (sample: string) => db.prepare<OutcomeRow>(outcomePageSql(sample)).raw();
  const countOf = (sample: string) => db.prepare<{ n: number }>(outcomes("COUNT(*) AS n", sample));
  const page = { every: pageOf(EVERY), one: pageOf(ONE) };
  const count = { every: countOf(EVERY), one: countOf(ONE) };
  // rowid is the commit order: writes serialize on SQLite's lock and attempts are never deleted,
  // so a later commit always has larger rowids (stet never VACUUMs, which could renumber them).
  const feed = db
    .prepare<[number, ...AttemptHeadRow]>(
      `SELECT rowid, ${ATTEMPT_HEAD_COLUMNS} FROM attempts
       WHERE run_id = @runId AND rowid > @after ORDER BY rowid LIMIT @limit`,
    )
    .raw();
  const newest = db.prepare<{ cursor: number | null }>(`SELECT MAX(rowid) AS cursor FROM attempts`);
  // A run's spend, all of it (by the run's index) or after a cursor in commit order (rowid for
  // attempts, as the feed; seq for scorings, AUTOINCREMENT). After a cursor, `+run_id` keeps the
  // planner on the rowid range (the rows since the last read) rather than the run's whole index.
  // One statement, so both tables are read in one snapshot; its cursor is each table's newest
  // row of any run: writes are serialized, so every row of the run up to it has been read.
  const spend = (runFilter: string) =>
    db.prepare<SpendRow>(
      `SELECT a.cost AS attempt_cost, a.priced, (SELECT MAX(rowid) FROM attempts) AS last_attempt,
         s.cost AS scoring_cost, (SELECT MAX(seq) FROM scorings) AS last_scoring
       FROM (SELECT TOTAL(CASE WHEN provenance_kind = 'executed' THEN cost_usd END) AS cost,
               COUNT(CASE WHEN provenance_kind = 'executed' THEN cost_usd END) AS priced
             FROM attempts WHERE ${runFilter} AND rowid > @attempts) a,
            (SELECT TOTAL(cost_usd) AS cost
             FROM scorings WHERE ${runFilter} AND seq > @scorings) s`,
    );
  const spendAll = spend("run_id = @runId");
  const spendAfter = spend("+run_id = @runId");

  const benchmarks = db.prepare<{
    evalName: string;
    runs: number;
    running: number;
    lastCreatedAt: string;
  }>(
    `SELECT eval_name AS evalName, COUNT(*) AS runs, SUM(status = 'running') AS running,
       MAX(created_at) AS lastCreatedAt
     FROM runs GROUP BY eval_name ORDER BY lastCreatedAt DESC, eval_name`,
  );

  return {
    listOutcomes(runId: string, epochs: number, filter: OutcomeFilter): OutcomePage {
      const params = outcomeParams(runId, epochs, filter);
      const which = filter.sampleId === undefined ? "every" : "one";
      const rows = page[which].all({
        ...params,
        limit: filter.limit ?? -1,
        offset: filter.offset ?? 0,
      });
      const map = attemptMapper(runId);
      return {
        total: count[which].get(params)?.n ?? 0,
        entries: rows.map((row) => toOutcomeEntry(runId, row, map.head)),
      };
    },

    listAttemptsAfter(runId: string, after: number | undefined, limit: number): AttemptFeed {
      if (after === undefined) return { attempts: [], cursor: newest.get()?.cursor ?? 0 };
      return feedPage(runId, feed.all({ runId, after, limit }), after);
    },

    readSpend(runId: string, after: SpendCursor | undefined): StoredSpend {
      const from = after ?? SPEND_START;
      return toStoredSpend((after ? spendAfter : spendAll).get({ runId, ...from }), from);
    },

    listBenchmarks(): BenchmarkSummary[] {
      return benchmarks.all();
    },
  };
}
