import { randomBytes } from "node:crypto";
import { jsonSchema, type Json } from "../core/json.js";
import { parseColumn } from "./rows.js";
import type { CacheEntry, CacheStats, CachedReply } from "./types.js";

/**
 * Reply-cache rows (`reply_cache` and `store_meta`, SQLite migration 10, PostgreSQL 9) as both
 * adapters write and read them, and the SQL they share (both compile `@name` parameters).
 */
export const CACHE_SQL = {
  saltInsert: `INSERT INTO store_meta (name, value) VALUES ('cache-salt', @value)
    ON CONFLICT (name) DO NOTHING`,
  saltGet: `SELECT value FROM store_meta WHERE name = 'cache-salt'`,
  get: `SELECT request, reply, created_at FROM reply_cache
    WHERE call_hash = @callHash AND credential = @credential AND created_at >= @since`,
  put: `INSERT INTO reply_cache (call_hash, credential, request, reply, created_at)
    VALUES (@callHash, @credential, @request, @reply, @createdAt)
    ON CONFLICT (call_hash, credential) DO NOTHING`,
  stats: `SELECT COUNT(*) AS entries, COALESCE(SUM(LENGTH(request) + LENGTH(reply)), 0) AS bytes,
    MIN(created_at) AS oldest, MAX(created_at) AS newest FROM reply_cache`,
  prune: `DELETE FROM reply_cache WHERE created_at < @before`,
  clear: `DELETE FROM reply_cache`,
} as const;

export interface CacheRow {
  request: string;
  reply: string;
  created_at: string;
}

export interface CacheStatsRow {
  entries: number | string;
  bytes: number | string;
  oldest: string | null;
  newest: string | null;
}

/** A stored entry's parameters. */
export function cacheParams(entry: CacheEntry): Record<string, string> {
  const { callHash, credential, request, createdAt } = entry;
  return { callHash, credential, request, reply: JSON.stringify(entry.reply), createdAt };
}

/** A row read back, its reply parsed (never cast). */
export function toCachedReply(row: CacheRow): CachedReply {
  const reply: Json = parseColumn(jsonSchema, row.reply, "cached reply");
  return { request: row.request, reply, createdAt: row.created_at };
}

/** The statistics row as numbers (PostgreSQL's counts and sums come back as text). */
export function toCacheStats(row: CacheStatsRow | undefined): CacheStats {
  return {
    entries: Number(row?.entries ?? 0),
    bytes: Number(row?.bytes ?? 0),
    oldest: row?.oldest ?? null,
    newest: row?.newest ?? null,
  };
}

/** A new store's salt for credential hashes: 32 random bytes, hex. */
export function newSalt(): string {
  return randomBytes(32).toString("hex");
}
