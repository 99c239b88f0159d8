import { takeFromBucket } from "../../core/rate-limits.js";
import {
  RATE_SQL,
  toRateWaits,
  waitsParams,
  type BucketRow,
  type RateWaitsRow,
} from "../rate-rows.js";
import type { RateBudgetStore } from "../types.js";
import type { PostgresContext } from "./context.js";
import { statement, transaction } from "./driver.js";

/** The rate-limit statements (SQL shared with SQLite). */
const rateStatements = {
  // The row is made first, so the FOR UPDATE below always has one to lock.
  bucketInit: statement(
    "INSERT INTO rate_buckets (endpoint, requests, tokens, at_ms) VALUES (@endpoint, 0, 0, -1) ON CONFLICT (endpoint) DO NOTHING",
    { prepare: true },
  ),
  bucketLock: statement(
    "SELECT requests, tokens, at_ms, (extract(epoch from clock_timestamp()) * 1000)::float8 AS now_ms FROM rate_buckets WHERE endpoint = @endpoint FOR UPDATE",
    { prepare: true },
  ),
  bucketPut: statement(RATE_SQL.bucketPut, { prepare: true }),
  waitsPut: statement(RATE_SQL.waitsPut),
  waitsList: statement(RATE_SQL.waitsList),
};

/**
 * Rate-limit buckets and waits (`RateBudgetStore`) in PostgreSQL: every worker on every machine
 * shares each endpoint's bucket, locked, refilled by the database server's clock and written
 * back in one transaction per chunk (a process asks for a chunk, never for each request).
 */
export function postgresRates(c: PostgresContext): RateBudgetStore {
  const s = rateStatements;
  return {
    async take(endpoint, spec, want) {
      return c.guard(() =>
        transaction(c.pool, async (tx) => {
          await s.bucketInit.run(tx, { endpoint });
          const [row] = await s.bucketLock.rows<BucketRow & { now_ms: number }>(tx, { endpoint });
          if (!row) throw new Error(`the rate bucket of ${endpoint} was not stored`);
          const level =
            row.at_ms < 0
              ? undefined
              : { requests: row.requests, tokens: row.tokens, atMs: row.at_ms };
          const taken = takeFromBucket(level, spec, want, row.now_ms);
          await s.bucketPut.run(tx, { endpoint, ...taken.level });
          return { granted: taken.granted, retryInMs: taken.retryInMs };
        }),
      );
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
