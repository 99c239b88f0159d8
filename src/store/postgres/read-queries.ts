import { statement, type Queryable } from "./driver.js";
import {
  ATTEMPT_HEAD_COLUMNS,
  attemptMapper,
  feedPage,
  outcomeParams,
  toOutcomeEntry,
  type AttemptHeadRow,
  type OutcomeRow,
} from "../rows.js";
import { toStoredSpend, type SpendRow } from "../spend-rows.js";
import type {
  AttemptFeed,
  BenchmarkSummary,
  OutcomeFilter,
  OutcomePage,
  SpendCursor,
  StoredSpend,
} from "../types.js";

/** Score elements of the outcome (of `@scorer` when given) that have a numeric value. */
const VALUED_SCORES = `SELECT 1 FROM jsonb_array_elements(o.scores::jsonb) j
  WHERE (@scorer::text IS NULL OR j ->> 'scorer' = @scorer)
    AND jsonb_typeof(j -> 'value') = 'number'`;

/** The SQLite adapter's OUTCOMES (see ../sqlite/read-queries.ts), in PostgreSQL's dialect. */
const OUTCOMES = `WITH keyed AS (
    SELECT s.sample_id AS k_sample_id, e.epoch AS k_epoch, s.fingerprint AS k_fingerprint,
      s.sample AS k_sample,
      (SELECT a.attempt FROM attempts_now a
        WHERE a.run_id = s.run_id AND a.sample_id = s.sample_id AND a.epoch = e.epoch
          AND a.fingerprint = s.fingerprint
        ORDER BY a.status = 'scored' DESC, a.attempt DESC LIMIT 1) AS k_outcome,
      (SELECT COUNT(*) FROM attempts a
        WHERE a.run_id = s.run_id AND a.sample_id = s.sample_id AND a.epoch = e.epoch)::int
        AS k_attempts
    FROM samples s CROSS JOIN generate_series(1, @epochs::int) AS e(epoch)
    WHERE s.run_id = @runId AND (@sampleId::text IS NULL OR s.sample_id = @sampleId)
  ),
  o AS (
    SELECT k.*, COALESCE(a.status, 'pending') AS k_status, a.*
    FROM keyed k LEFT JOIN attempts_now a ON a.run_id = @runId AND a.sample_id = k.k_sample_id
      AND a.epoch = k.k_epoch AND a.attempt = k.k_outcome
  )
  SELECT %COLUMNS% FROM o
  WHERE (@status::text IS NULL OR o.k_status = @status)
    AND (@scorer::text IS NULL OR EXISTS (${VALUED_SCORES}))
    AND (@result::text IS NULL OR (o.k_status = 'scored' AND CASE @result
      WHEN 'fail' THEN EXISTS (${VALUED_SCORES} AND (j ->> 'value')::float8 < 1)
      ELSE EXISTS (${VALUED_SCORES})
        AND NOT EXISTS (${VALUED_SCORES} AND (j ->> 'value')::float8 < 1) END))
    AND (@search::text IS NULL OR strpos(
      lower(o.k_sample_id || chr(10) || o.k_sample || chr(10) || COALESCE(o.output, '')),
      lower(@search)) > 0)`;

const page = statement(
  OUTCOMES.replace(
    "%COLUMNS%",
    `o.k_sample_id, o.k_epoch, o.k_fingerprint, o.k_sample, o.k_attempts,
     ${ATTEMPT_HEAD_COLUMNS}, output`,
  ) + ` ORDER BY o.k_sample_id, o.k_epoch LIMIT @limit::int OFFSET @offset::int`,
);
const count = statement(OUTCOMES.replace("%COLUMNS%", "COUNT(*)::int AS n"));
// Within a run, seq is commit order: a run's writes serialize on its row lock (lockOwner), so
// an attempt inserted later also commits later.
const feed = statement(
  `SELECT seq::float8, ${ATTEMPT_HEAD_COLUMNS} FROM attempts
   WHERE run_id = @runId AND seq > @after ORDER BY seq LIMIT @limit::int`,
);
const newest = statement(
  `SELECT COALESCE(MAX(seq), 0)::float8 AS cursor FROM attempts WHERE run_id = @runId`,
);
// The spend after a cursor in commit order (seq, in both tables: a run's writes take its row lock
// before they insert). One statement: under READ COMMITTED, both tables are read in one snapshot.
const spend = statement(
  `SELECT a.cost AS attempt_cost, a.priced, a.last AS last_attempt,
     s.cost AS scoring_cost, s.last AS last_scoring
   FROM (SELECT COALESCE(SUM(cost_usd) FILTER (WHERE provenance_kind = 'executed'), 0)::float8 AS cost,
           (COUNT(cost_usd) FILTER (WHERE provenance_kind = 'executed'))::int AS priced,
           MAX(seq)::float8 AS last
         FROM attempts WHERE run_id = @runId AND seq > @attempts) a,
        (SELECT COALESCE(SUM(cost_usd), 0)::float8 AS cost, MAX(seq)::float8 AS last
         FROM scorings WHERE run_id = @runId AND seq > @scorings) s`,
);
const benchmarks = statement(
  `SELECT eval_name AS "evalName", COUNT(*)::int AS runs,
     (COUNT(*) FILTER (WHERE status = 'running'))::int AS running,
     MAX(created_at) AS "lastCreatedAt"
   FROM runs GROUP BY eval_name ORDER BY "lastCreatedAt" DESC, eval_name`,
);

/**
 * The PostgreSQL side of the store's read model for the API and UI: paged outcomes with filters,
 * an attempt feed in commit order, and benchmark summaries.
 *
 * @example await postgresReadModel.listOutcomes(pool, runId, 2, { status: "error" });
 */
export const postgresReadModel = {
  async listOutcomes(
    db: Queryable,
    runId: string,
    epochs: number,
    filter: OutcomeFilter,
  ): Promise<OutcomePage> {
    const params = outcomeParams(runId, epochs, filter);
    const [rows, totals] = await Promise.all([
      page.tuples<OutcomeRow>(db, {
        ...params,
        limit: filter.limit ?? null,
        offset: filter.offset ?? 0,
      }),
      count.rows<{ n: number }>(db, params),
    ]);
    const map = attemptMapper(runId);
    return {
      total: totals[0]?.n ?? 0,
      entries: rows.map((row) => toOutcomeEntry(runId, row, map.head)),
    };
  },

  async listAttemptsAfter(
    db: Queryable,
    runId: string,
    after: number | undefined,
    limit: number,
  ): Promise<AttemptFeed> {
    if (after === undefined) {
      const [row] = await newest.rows<{ cursor: number }>(db, { runId });
      return { attempts: [], cursor: row?.cursor ?? 0 };
    }
    const rows = await feed.tuples<[number, ...AttemptHeadRow]>(db, { runId, after, limit });
    return feedPage(runId, rows, after);
  },

  async readSpend(db: Queryable, runId: string, after: SpendCursor): Promise<StoredSpend> {
    const [row] = await spend.rows<SpendRow & { [column: string]: unknown }>(db, {
      runId,
      ...after,
    });
    return toStoredSpend(row, after);
  },

  async listBenchmarks(db: Queryable): Promise<BenchmarkSummary[]> {
    return benchmarks.rows<BenchmarkSummary & { [column: string]: unknown }>(db);
  },
};
