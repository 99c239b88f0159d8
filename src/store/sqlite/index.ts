import { dirname } from "node:path";
import { sqliteBatches } from "./batches.js";
import { sqliteCache } from "./cache.js";
import { sqliteReviews } from "./reviews.js";
import { sqliteRates } from "./rates.js";
import type { Store } from "../types.js";
import { sqliteAttempts } from "./attempts.js";
import { SqliteContext } from "./context.js";
import type { SqliteDatabase } from "./driver.js";
import { sqliteJournal } from "./journal.js";
import { sqliteLeases } from "./leases.js";
import { openSqliteDatabase } from "./open.js";
import { sqliteReads } from "./reads.js";
import { sqliteRuns } from "./runs.js";

export interface SqliteStoreOptions {
  /** How long a write waits for another process's lock before failing (E_STORE). Default 10 s. */
  busyTimeoutMs?: number;
  /** The store's clock, in ms since the epoch: heartbeats and their ages use it. */
  now?: () => number;
  /** False for commands that only read: a missing, empty or foreign file is refused, not made a store. */
  create?: boolean;
}

/**
 * Opens (creating it and its directory if missing) a SQLite store file and migrates it.
 * Several processes may open the same file: writes serialize on SQLite's lock.
 *
 * @example const store = openSqliteStore(".stet/stet.db");
 */
export function openSqliteStore(path: string, options: SqliteStoreOptions = {}): Store {
  const db = openSqliteDatabase(path, {
    busyTimeoutMs: options.busyTimeoutMs ?? 10_000,
    ...(options.create === undefined ? {} : { create: options.create }),
  });
  return createSqliteStore(db, { location: path, fallbackDir: dirname(path), now: options.now });
}

/**
 * A Store over an open, migrated SQLite database (see openSqliteStore for the usual entry).
 *
 * One sub-port per file over a shared context (`context.ts`: the database, the statement tables,
 * the clock, `guard` and `fence`).
 *
 * @example createSqliteStore(db, { location: "test.db", fallbackDir: "." })
 */
export function createSqliteStore(
  db: SqliteDatabase,
  options: { location: string; fallbackDir: string; now?: (() => number) | undefined },
): Store {
  const c = new SqliteContext(db, options.location, options.fallbackDir, options.now ?? Date.now);
  return {
    location: c.location,
    fallbackDir: c.fallbackDir,
    runs: sqliteRuns(c),
    attempts: sqliteAttempts(c),
    reads: sqliteReads(c),
    journal: sqliteJournal(c),
    cache: sqliteCache(c),
    reviews: sqliteReviews(c),
    rates: sqliteRates(c),
    batches: sqliteBatches(c),
    leases: sqliteLeases(c),
    async close() {
      db.close();
    },
  };
}
