import type { Queryable } from "./driver.js";

/** The tables a run's keyset pages read, with what each refresh analyzes (the view's join too). */
const ANALYZED = {
  attempts: "attempts, scorings",
  samples: "samples",
} as const;

/** How many of a run's rows are counted, at most, to tell whether the planner undercounts it. */
const COUNT_CAP = 20_000;
/** A run this large whose rows the planner puts at under a quarter of that is analyzed again. */
const STALE_AT = 10_000;
/** How long a run's check stands, so a read of a small run costs one round trip, not two. */
const CHECK_MS = 30_000;

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
