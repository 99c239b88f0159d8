import { retryInMs, type BucketSpec, type BucketWant } from "../../core/rate-limits.js";
import { pauseRow, RATE_SQL, toRateWaits, waitsParams, type RateWaitsRow } from "../rate-rows.js";
import type { RateBudgetStore } from "../types.js";
import type { PostgresContext } from "./context.js";
import { DB_NOW_MS, statement, transaction, type Queryable } from "./driver.js";

/**
 * One chunk taken from an endpoint's bucket in one statement: the row is locked, refilled by the
 * database server's clock, granted from and written back without a round trip between, so the
 * lock is held for microseconds, never across a client's network or event loop (four workers
 * asking at once wait on each other only inside the server). The arithmetic is
 * `core/rate-limits.ts`'s `takeFromBucket`, written in SQL (the contract suite checks they
 * agree); a row stored with `at_ms` < 0 is a full bucket. No row yet: nothing is returned, and
 * the caller makes it.
 */
const TAKE_SQL = `
WITH cur AS (
  SELECT requests, tokens, at_ms, ${DB_NOW_MS} AS now_ms
    FROM rate_buckets WHERE endpoint = @endpoint FOR UPDATE
), lvl AS (
  SELECT now_ms,
    CASE WHEN at_ms < 0 THEN @requestCapacity::float8
         ELSE LEAST(@requestCapacity::float8, requests + GREATEST(0, now_ms - at_ms) * @requestRate::float8) END AS requests,
    CASE WHEN at_ms < 0 THEN @tokenCapacity::float8
         ELSE LEAST(@tokenCapacity::float8, tokens + GREATEST(0, now_ms - at_ms) * @tokenRate::float8) END AS tokens
    FROM cur
), grant_ AS (
  SELECT now_ms, requests, tokens,
    CASE WHEN requests < 1 OR tokens <= 0 THEN 0
         ELSE GREATEST(1, LEAST(@wantRequests::float8, floor(requests))) END AS granted_requests,
    CASE WHEN requests < 1 OR tokens <= 0 THEN 0
         ELSE GREATEST(LEAST(@wantTokens::float8, tokens), LEAST(@minTokens::float8, @wantTokens::float8)) END AS granted_tokens
    FROM lvl
), put AS (
  UPDATE rate_buckets b
     SET requests = g.requests - g.granted_requests, tokens = g.tokens - g.granted_tokens, at_ms = g.now_ms
    FROM grant_ g WHERE b.endpoint = @endpoint
)
SELECT requests, tokens, granted_requests, granted_tokens FROM grant_`;

/** The rate-limit statements (SQL shared with SQLite). */
const rateStatements = {
  // A full bucket until its first take (at_ms < 0).
  bucketInit: statement(
    "INSERT INTO rate_buckets (endpoint, requests, tokens, at_ms) VALUES (@endpoint, 0, 0, -1) ON CONFLICT (endpoint) DO NOTHING",
  ),
  take: statement(TAKE_SQL, { prepare: true }),
  pauseExtend: statement(
    `INSERT INTO rate_buckets (endpoint, requests, tokens, at_ms) VALUES (@row, 0, 0, ${DB_NOW_MS} + @forMs::float8)
     ON CONFLICT (endpoint) DO UPDATE SET at_ms = GREATEST(rate_buckets.at_ms, excluded.at_ms)
     RETURNING GREATEST(0, at_ms - ${DB_NOW_MS}) AS left_ms`,
  ),
  pauseLeft: statement(
    `SELECT GREATEST(0, at_ms - ${DB_NOW_MS}) AS left_ms FROM rate_buckets WHERE endpoint = @row`,
  ),
  waitsPut: statement(RATE_SQL.waitsPut(DB_NOW_MS)),
  waitsList: statement(RATE_SQL.waitsList(DB_NOW_MS)),
};

interface TakeRow {
  requests: number;
  tokens: number;
  granted_requests: number;
  granted_tokens: number;
}

/**
 * Rate-limit buckets and waits (`RateBudgetStore`) in PostgreSQL: every worker on every machine
 * shares each endpoint's bucket, taken from in one statement per chunk (a process asks for a
 * chunk, never for each request). `db` is where takes go: a connection of their own, so a take
 * never queues behind the process's commits.
 */
export function postgresRates(c: PostgresContext, db: () => Queryable): RateBudgetStore {
  const s = rateStatements;
  const takeOnce = async (endpoint: string, spec: BucketSpec, want: BucketWant) => {
    const [row] = await s.take.rows<TakeRow>(db(), {
      endpoint,
      ...spec,
      wantRequests: want.requests,
      wantTokens: want.tokens,
      minTokens: want.minTokens,
    });
    return row;
  };
  return {
    async take(endpoint, spec, want) {
      return c.guard(async () => {
        let row = await takeOnce(endpoint, spec, want);
        if (!row) {
          await s.bucketInit.run(db(), { endpoint });
          row = await takeOnce(endpoint, spec, want);
        }
        if (!row) throw new Error(`the rate bucket of ${endpoint} was not stored`);
        const granted = { requests: row.granted_requests, tokens: row.granted_tokens };
        const level = { requests: row.requests, tokens: row.tokens };
        return { granted, retryInMs: granted.requests > 0 ? 0 : retryInMs(level, spec, want) };
      });
    },
    async sharePause(endpoint, forMs) {
      return c.guard(async () => {
        const params = { row: pauseRow(endpoint), forMs };
        const [row] = await (forMs > 0 ? s.pauseExtend : s.pauseLeft).rows<{ left_ms: number }>(
          db(),
          params,
        );
        return row?.left_ms ?? 0;
      });
    },
    async recordWaits(runId, owner, waits) {
      await c.guard(() =>
        transaction(c.pool, async (tx) => {
          for (const w of waits) await s.waitsPut.run(tx, waitsParams(runId, owner, w));
        }),
      );
    },
    async listWaits(runId) {
      return c.guard(async () =>
        (await s.waitsList.rows<RateWaitsRow>(c.pool, { runId })).map(toRateWaits),
      );
    },
  };
}
