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
    SELECT k.*, COALESCE(a.status, 'pending') AS k_status, a.*
    FROM keyed k LEFT JOIN attempts_now a ON a.run_id = @runId AND %JOINED% a.sample_id = k.k_sample_id
      AND a.epoch = k.k_epoch AND a.attempt = k.k_outcome
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

/**
 * The SQLite side of the store's read model for the API and UI: paged outcomes with filters, an
 * attempt feed in commit order, and benchmark summaries.
 *
 * @example const read = prepareReadModel(db); read.listOutcomes(runId, 2, { status: "error" });
 */
export function prepareReadModel(db: SqliteDatabase) {
  const EVERY = "(@sampleId IS NULL OR s.sample_id = @sampleId)";
  const ONE = "s.sample_id = @sampleId";
  // Of one sample, or of every one. SQLite materializes attempts_now for the join with only the
  // constant terms of its ON clause: without the sample's, every attempt of the run (0.36 s for
  // one sample of 200,000); and it uses the snapshot's key only when no `@sampleId IS NULL OR …`
  // hides `sample_id = @sampleId` (1.3 ms with both).
  const outcomes = (columns: string, sample: string) =>
    OUTCOMES.replace("%COLUMNS%", columns)
      .replace("%SAMPLE%", sample)
      .replace("%JOINED%", sample === ONE ? "a.sample_id = @sampleId AND " : "");
  const pageOf = (sample: string) =>
    db
      .prepare<OutcomeRow>(
        outcomes(
          `o.k_sample_id, o.k_epoch, o.k_fingerprint, o.k_sample, o.k_attempts,
           ${ATTEMPT_HEAD_COLUMNS}, output`,
          sample,
        ) + ` ORDER BY o.k_sample_id, o.k_epoch LIMIT @limit OFFSET @offset`,
      )
      .raw();
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
