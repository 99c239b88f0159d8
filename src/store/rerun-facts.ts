import { doneOf, keyField } from "./rerun-rows.js";
import type { RerunFact } from "./types.js";

/**
 * The per-run counts of open re-run requests by what places their keys in a plan (`RerunFact`
 * without `flying`), kept in the transaction of every write that can move one (SQLite migration
 * 21, PostgreSQL 20), so a report's plan reads a few rows instead of every open request (500,000
 * of them took `stet show` 1.4 s). Each request row holds the fact it is counted under (`fact`:
 * `held|heldScorer|later`, NULL once done); `rerun_counts` holds how many rows hold each. A write
 * recomputes the facts of the requests of the samples it touched (`rerunFactRowsSql`) and moves
 * the counts of those that changed; a write of the requests themselves recomputes the run's. The
 * keys in flight are read at the report, as they are few (`RERUN_COUNTS_SQL`).
 */

/** Which requests a statement recomputes: those of some samples, of one run, or of every run. */
type Scope = "samples" | "run" | "all";

/**
 * Each request in `scope` (its run, sample, epoch), the fact it is counted under (`was`) and the
 * one it has now (`now`, NULL when done: `doneOf`): the key's outcome as the figures keep it (its
 * status, `none` without one; whether its error is a scorer's) and its latest attempt after the one
 * the request follows for the sample's current fingerprint (0 none, 1 an error, 2 a scorer's
 * error; an open request has no scored one). `samples`: `@sampleIds`, a JSON array in SQLite, a
 * text array in PostgreSQL, each looked up by the requests' primary key.
 */
function rerunFactRowsSql(dialect: "sqlite" | "postgres", scope: Scope): string {
  const sqlite = dialect === "sqlite";
  const key = sqlite
    ? `json_extract(f.figures, '$."' || r.epoch || '"')`
    : "f.figures::jsonb -> r.epoch::text";
  const field = (path: "status" | "attempt" | "error.type") => keyField(dialect, "k.j", path);
  const errorType = sqlite ? "json_extract(a.error, '$.type')" : "(a.error::jsonb ->> 'type')";
  // PostgreSQL would fold `j` into each expression that reads it but for the inner OFFSET 0.
  const requests =
    scope === "samples"
      ? sqlite
        ? `rerun_requests AS r WHERE r.run_id = @runId
            AND r.sample_id IN (SELECT value FROM json_each(@sampleIds))`
        : `unnest(@sampleIds::text[]) AS ids(sample_id) CROSS JOIN LATERAL (
            SELECT * FROM rerun_requests AS q
            WHERE q.run_id = @runId AND q.sample_id = ids.sample_id COLLATE "C") AS r`
      : `rerun_requests AS r${scope === "run" ? " WHERE r.run_id = @runId" : ""}`;
  return `SELECT k.run_id, k.sample_id, k.epoch, k.fact AS was,
    CASE WHEN ${doneOf(dialect, "k.j", "k.after_attempt")} THEN NULL ELSE
      COALESCE(${field("status")}, 'none')
      || CASE WHEN ${field("error.type")} = 'scorer' THEN '|1|' ELSE '|0|' END
      || COALESCE((SELECT CASE WHEN ${errorType} = 'scorer' THEN '2' ELSE '1' END
        FROM attempts_now AS a JOIN samples AS s
          ON s.run_id = a.run_id AND s.sample_id = a.sample_id AND s.fingerprint = a.fingerprint
        WHERE a.run_id = k.run_id AND a.sample_id = k.sample_id AND a.epoch = k.epoch
          AND a.attempt > k.after_attempt
        ORDER BY a.attempt DESC LIMIT 1), '0') END AS now
  FROM (
    SELECT r.run_id, r.sample_id, r.epoch, r.after_attempt, r.fact,
      (SELECT ${key} FROM sample_figures AS f
        WHERE f.run_id = r.run_id AND f.sample_id = r.sample_id) AS j
    FROM ${requests}${sqlite ? "" : "\n    OFFSET 0"}
  ) AS k`;
}

/**
 * The statements that set every request's fact of `scope` ("run": `@runId`'s; "all": every run's,
 * the migration's) and count them again from nothing: what a write of the requests themselves
 * runs (a claim recording, replacing or clearing them), and a build of the run's figures.
 */
export function rebuildRerunFactsSql(
  dialect: "sqlite" | "postgres",
  scope: "run" | "all",
): { clearCounts: string; setFacts: string; countFacts: string } {
  const differs = dialect === "sqlite" ? "IS NOT" : "IS DISTINCT FROM";
  const ofRun = scope === "run" ? "run_id = @runId" : "true";
  return {
    clearCounts: `DELETE FROM rerun_counts WHERE ${ofRun}`,
    setFacts: `UPDATE rerun_requests AS r SET fact = x.now FROM (${rerunFactRowsSql(dialect, scope)}) AS x
      WHERE r.run_id = x.run_id AND r.sample_id = x.sample_id AND r.epoch = x.epoch
        AND r.fact ${differs} x.now`,
    countFacts: `INSERT INTO rerun_counts (run_id, fact, n)
      SELECT run_id, fact, count(*) FROM rerun_requests WHERE ${ofRun} AND fact IS NOT NULL
      GROUP BY run_id, fact`,
  };
}

/** How a count is moved: the rows inserted are added to the counts already there. */
export const RERUN_COUNT_UPSERT =
  "ON CONFLICT (run_id, fact) DO UPDATE SET n = rerun_counts.n + excluded.n";

/**
 * One read of what a report's plan counts of the open requests: the counts (`flying` 0), then the
 * fact of each open request whose key is in flight (`flying` 1, `n` 1), which `toRerunFacts`
 * moves out of its count. One statement, so both are of one commit.
 */
const RERUN_COUNTS_SQL = `SELECT fact, n, 0 AS flying FROM rerun_counts
    WHERE run_id = @runId AND n > 0
  UNION ALL
  SELECT r.fact, 1, 1 FROM inflight AS i JOIN rerun_requests AS r
    ON r.run_id = i.run_id AND r.sample_id = i.sample_id AND r.epoch = i.epoch
    WHERE i.run_id = @runId AND r.fact IS NOT NULL`;

/**
 * The statements both dialects prepare, as text: the report's read (`counts`), the facts of the
 * requests of `@sampleIds` (`factRows`), a count moved by `@n` (`addCount`), and the run's facts
 * and counts made again (`rebuildRerunFactsSql`).
 */
export function rerunFactsStatements(dialect: "sqlite" | "postgres") {
  return {
    counts: RERUN_COUNTS_SQL,
    factRows: rerunFactRowsSql(dialect, "samples"),
    addCount: `INSERT INTO rerun_counts (run_id, fact, n) VALUES (@runId, @fact, @n)
      ${RERUN_COUNT_UPSERT}`,
    ...rebuildRerunFactsSql(dialect, "run"),
  };
}

/** A row of `RERUN_COUNTS_SQL`. */
export interface RerunCountRow {
  fact: string;
  n: number | string;
  flying: number;
}

/** The facts `reads.rerunFacts` gives from `RERUN_COUNTS_SQL`'s rows, the in-flight keys apart. */
export function toRerunFacts(rows: readonly RerunCountRow[]): RerunFact[] {
  const counts = new Map<string, RerunFact>();
  const add = (fact: string, flying: boolean, n: number) => {
    const k = `${fact}|${flying ? 1 : 0}`;
    const found = counts.get(k);
    if (found) found.keys += n;
    else counts.set(k, { ...parseFact(fact), flying, keys: n });
  };
  for (const row of rows) {
    if (row.flying === 1) {
      add(row.fact, false, -1);
      add(row.fact, true, 1);
    } else add(row.fact, false, Number(row.n));
  }
  return [...counts.values()].filter((f) => f.keys > 0);
}

/** A request's `fact` column (`held|heldScorer|later`) as `RerunFact`'s fields. */
function parseFact(fact: string): Omit<RerunFact, "flying" | "keys"> {
  const [held, scorer, later] = fact.split("|");
  return {
    held: held === "scored" || held === "error" ? held : null,
    heldScorer: scorer === "1",
    later: later === "2" ? "scorer-error" : later === "1" ? "error" : "none",
  };
}
