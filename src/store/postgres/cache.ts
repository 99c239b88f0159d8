import {
  CACHE_SQL,
  cacheParams,
  newSalt,
  toCachedReply,
  toCacheStats,
  type CacheRow,
  type CacheStatsRow,
} from "../cache-rows.js";
import type { CachedReply, CacheEntry, CacheStats, ReplyCacheStore } from "../types.js";
import type { PostgresContext } from "./context.js";
import { statement } from "./driver.js";

/** The reply cache's statements (SQL shared with SQLite). */
const cacheStatements = {
  saltInsert: statement(CACHE_SQL.saltInsert),
  saltGet: statement(CACHE_SQL.saltGet),
  get: statement(CACHE_SQL.get, { prepare: true }),
  put: statement(CACHE_SQL.put, { prepare: true }),
  stats: statement(CACHE_SQL.stats),
  prune: statement(CACHE_SQL.prune),
  clear: statement(CACHE_SQL.clear),
};

/** The reply cache (`ReplyCacheStore`) in PostgreSQL: every worker and machine of it shares it. */
export function postgresCache(c: PostgresContext): ReplyCacheStore {
  const s = cacheStatements;
  let salt: string | undefined;
  return {
    async salt(): Promise<string> {
      if (salt !== undefined) return salt;
      return c.guard(async () => {
        // Two workers may make it at once: the first insert wins and both read the same.
        await s.saltInsert.run(c.pool, { value: newSalt() });
        const [row] = await s.saltGet.rows<{ value: string }>(c.pool);
        if (!row) throw new Error("the cache salt was not stored");
        return (salt = row.value);
      });
    },
    async get(
      callHash: string,
      credential: string,
      since: string,
    ): Promise<CachedReply | undefined> {
      return c.guard(async () => {
        const [row] = await s.get.rows<CacheRow>(c.pool, { callHash, credential, since });
        return row && toCachedReply(row);
      });
    },
    async put(entry: CacheEntry): Promise<void> {
      await c.guard(() => s.put.run(c.pool, cacheParams(entry)));
    },
    async stats(): Promise<CacheStats> {
      return c.guard(async () => toCacheStats((await s.stats.rows<CacheStatsRow>(c.pool))[0]));
    },
    async prune(before: string): Promise<number> {
      return c.guard(() => s.prune.run(c.pool, { before }));
    },
    async clear(): Promise<number> {
      return c.guard(() => s.clear.run(c.pool));
    },
  };
}
