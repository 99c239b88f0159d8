import type { Queryable } from "./driver.js";

/** The tables a run's keyset pages read, with what each refresh analyzes (the view's join too). */
const ANALYZED = {
  attempts: "attempts, scorings",
  samples: "samples",
  leases: "leases",
  sample_figures: "sample_figures",
  rerun_requests: "rerun_requests, sample_figures",
} as const;

/** How many of a run's rows are counted, at most, to tell whether the planner undercounts it. */
const COUNT_CAP = 20_000;
/** A run this large whose rows the planner puts at under a quarter of that is analyzed again. */
const STALE_AT = 10_000;
/** How long a run's check stands, so a read of a small run costs one round trip, not two. */
const CHECK_MS = 30_000;
/** Attempts of a run this process commits before it looks at the attempts' statistics once. */
const GROWN = 2_000;

/**
 * Keeps the planner's statistics of the tables a run's keyset pages read fresh enough to read
 * them by the primary key. Without them (a fresh schema; a large run just committed; autovacuum
 * off or not yet come round) the planner puts a run at a few hundred rows and plans each page of
 * `ORDER BY sample_id … LIMIT n` as a scan and sort of every row of the run: 90 ms a page of
 * 1,000 at 200,000 attempts, so a paged read of a large run was quadratic (19.5 s to fold
 * 200,000 attempt heads; 1.0 s after an `ANALYZE`). Before a paged read, `check` asks the
 * planner how many rows the run has and counts up to 20,000 of them; a run of 10,000 or more
 * that the planner puts at under a quarter of its count has its tables analyzed
 * (`SKIP_LOCKED`: a read never waits on another's `ANALYZE`). A role that does not own the
 * tables gets a warning from PostgreSQL, not an error, and reads as before.
 */
export class PlannerStats {
  /** When each (table, run) was last checked, by `Date.now()`. */
  private readonly checked = new Map<string, number>();
  /** Attempts this process committed of each run, until `grew` looked (then -1). */
  private readonly committed = new Map<string, number>();

  /**
   * After a commit of `n` attempts of a run. Once this process has committed 2,000 of them, if
   * the attempts' statistics were made on a table of fewer than 1,000 rows (or never), they are
   * made again. The plans a connection caches for its prepared statements (a commit's key
   * states) were made with them: on a fresh schema, a plan made on the empty table read each
   * key's attempts by walking every attempt of the run on `attempts_by_seq` (550 ms a commit at
   * 95,000 attempts; a 200,000-key distributed run did not finish in 15 minutes). An `ANALYZE`
   * invalidates those plans in every session; autovacuum, where it is on, does the same later.
   * A failure here fails no commit.
   */
  async grew(db: Queryable, runId: string, n: number): Promise<void> {
    const before = this.committed.get(runId) ?? 0;
    if (before < 0) return;
    if (before + n < GROWN) {
      this.committed.set(runId, before + n);
      return;
    }
    this.committed.set(runId, -1);
    try {
      const { rows } = await db.query<{ n: number }>(
        `SELECT reltuples::float8 AS n FROM pg_class WHERE oid = 'attempts'::regclass`,
      );
      if ((rows[0]?.n ?? -1) < GROWN / 2)
        await db.query(`ANALYZE (SKIP_LOCKED) attempts, scorings`);
    } catch {
      // Statistics are the planner's business: the commit stands either way.
    }
  }

  async check(db: Queryable, table: keyof typeof ANALYZED, runId: string): Promise<void> {
    const key = `${table}\u0000${runId}`;
    const at = this.checked.get(key);
    if (at !== undefined && Date.now() - at < CHECK_MS) return;
    this.checked.set(key, Date.now());
    const explained = await db.query<{ "QUERY PLAN": [{ Plan: { "Plan Rows": number } }] }>(
      `EXPLAIN (FORMAT JSON) SELECT 1 FROM ${table} WHERE run_id = $1::text`,
      [runId],
    );
    const estimate = explained.rows[0]!["QUERY PLAN"][0].Plan["Plan Rows"];
    if (estimate >= COUNT_CAP) return;
    const counted = await db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM (SELECT 1 FROM ${table} WHERE run_id = $1::text LIMIT $2::int) t`,
      [runId, COUNT_CAP],
    );
    const count = counted.rows[0]!.n;
    if (count >= STALE_AT && estimate * 4 < count) {
      await db.query(`ANALYZE (SKIP_LOCKED) ${ANALYZED[table]}`);
    }
  }
}
