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
import type { SqliteContext } from "./context.js";
import { prepareTable, sql } from "./statements.js";

/** The reply cache's statements (SQL shared with PostgreSQL). */
const SQLITE_CACHE_STATEMENTS = {
  saltInsert: sql(CACHE_SQL.saltInsert),
  saltGet: sql<{ value: string }>(CACHE_SQL.saltGet),
  get: sql<CacheRow>(CACHE_SQL.get),
  put: sql(CACHE_SQL.put),
  stats: sql<CacheStatsRow>(CACHE_SQL.stats),
  prune: sql(CACHE_SQL.prune),
  clear: sql(CACHE_SQL.clear),
};

/** The reply cache (`ReplyCacheStore`) in SQLite; its statements are prepared on first use. */
export function sqliteCache(c: SqliteContext): ReplyCacheStore {
  let prepared: ReturnType<typeof prepareTable<typeof SQLITE_CACHE_STATEMENTS>> | undefined;
  const s = () => (prepared ??= prepareTable(c.db, SQLITE_CACHE_STATEMENTS));
  let salt: string | undefined;
  return {
    async salt(): Promise<string> {
      return c.guard(() => {
        // Two processes may make it at once: the first insert wins and both read the same.
        if (salt !== undefined) return salt;
        s().saltInsert.run({ value: newSalt() });
        const row = s().saltGet.get();
        if (!row) throw new Error("the cache salt was not stored");
        return (salt = row.value);
      });
    },
    async get(
      callHash: string,
      credential: string,
      since: string,
    ): Promise<CachedReply | undefined> {
      return c.guard(() => {
        const row = s().get.get({ callHash, credential, since });
        return row && toCachedReply(row);
      });
    },
    async put(entry: CacheEntry): Promise<void> {
      c.guard(() => s().put.run(cacheParams(entry)));
    },
    async stats(): Promise<CacheStats> {
      return c.guard(() => toCacheStats(s().stats.get()));
    },
    async prune(before: string): Promise<number> {
      return c.guard(() => s().prune.run({ before }).changes);
    },
    async clear(): Promise<number> {
      return c.guard(() => s().clear.run().changes);
    },
  };
}
