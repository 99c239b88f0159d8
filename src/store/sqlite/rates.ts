import { takeFromBucket } from "../../core/rate-limits.js";
import {
  pauseRow,
  RATE_SQL,
  toRateWaits,
  waitsParams,
  type BucketRow,
  type RateWaitsRow,
} from "../rate-rows.js";
import type { RateBudgetStore } from "../types.js";
import type { SqliteContext } from "./context.js";
import { immediate, unsynced } from "./driver.js";
import { prepareTable, sql } from "./statements.js";

/** The rate-limit statements (SQL shared with PostgreSQL). */
const SQLITE_RATE_STATEMENTS = {
  bucketGet: sql<BucketRow>(RATE_SQL.bucketGet),
  bucketPut: sql(RATE_SQL.bucketPut),
  // Aged by each process's wall clock: the same on one machine.
  waitsPut: sql(RATE_SQL.waitsPut("@nowMs")),
  waitsList: sql<RateWaitsRow>(RATE_SQL.waitsList("@nowMs")),
};

/**
 * Rate-limit buckets and waits (`RateBudgetStore`) in SQLite: every process on the machine that
 * opens the file shares each endpoint's bucket, read and written in one IMMEDIATE transaction
 * and aged by each process's clock (wall time, the same on one machine).
 */
export function sqliteRates(c: SqliteContext): RateBudgetStore {
  let prepared: ReturnType<typeof prepareTable<typeof SQLITE_RATE_STATEMENTS>> | undefined;
  const s = () => (prepared ??= prepareTable(c.db, SQLITE_RATE_STATEMENTS));
  return {
    async take(endpoint, spec, want) {
      // Not fsynced: a level lost to a crash of the machine lets at most a bucket more through,
      // and an fsync held every chunk for as long as the disk was loaded (see `unsynced`).
      return c.guard(() =>
        unsynced(c.db, () =>
          immediate(c.db, () => {
            const row = s().bucketGet.get({ endpoint });
            const level = row && { requests: row.requests, tokens: row.tokens, atMs: row.at_ms };
            const taken = takeFromBucket(level, spec, want, Date.now());
            s().bucketPut.run({ endpoint, ...taken.level });
            return { granted: taken.granted, retryInMs: taken.retryInMs };
          }),
        ),
      );
    },
    async sharePause(endpoint, forMs) {
      return c.guard(() =>
        immediate(c.db, () => {
          const now = Date.now();
          const row = s().bucketGet.get({ endpoint: pauseRow(endpoint) });
          const until = Math.max(row?.at_ms ?? 0, now + forMs);
          if (forMs > 0) {
            s().bucketPut.run({
              endpoint: pauseRow(endpoint),
              requests: 0,
              tokens: 0,
              atMs: until,
            });
          }
          return Math.max(0, until - now);
        }),
      );
    },
    async recordWaits(runId, owner, waits) {
      c.guard(() =>
        immediate(c.db, () => {
          const nowMs = Date.now();
          for (const w of waits) s().waitsPut.run({ ...waitsParams(runId, owner, w), nowMs });
        }),
      );
    },
    async listWaits(runId) {
      return c.guard(() => s().waitsList.all({ runId, nowMs: Date.now() }).map(toRateWaits));
    },
  };
}
