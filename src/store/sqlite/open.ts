import Database from "better-sqlite3";
import { mkdirSync } from "node:fs";
import { dirname } from "node:path";
import { StetError, isStetError } from "../../core/errors.js";
import { migrateSqlite } from "./migrate.js";
import { messageOf } from "../rows.js";
import {
  checkHeader,
  checkTables,
  corruptStore,
  isCorruption,
  notAStore,
  sleepSync,
} from "./file.js";
import { busyMessage, isBusy } from "./lock-holder.js";
import type { SqliteDatabase } from "./driver.js";

export interface OpenSqliteOptions {
  busyTimeoutMs: number;
  /**
   * Whether a missing or empty file may become a store (default true). Without it, only an
   * existing stet store opens (`notAStore` otherwise), and nothing is created or written first.
   */
  create?: boolean;
}

/**
 * Opens a SQLite store database in WAL mode with durable commits and foreign keys, and migrates
 * it; retries while another process is doing the same. A missing file (and its directory) or an
 * empty one becomes a store unless `create` is false. Before anything is written, a file that is
 * not an intact SQLite database is refused as corrupt (`E_STORE_CORRUPT`) and another
 * application's database as not a store.
 *
 * @example const db = openSqliteDatabase(".stet/stet.db", { busyTimeoutMs: 10_000 });
 */
export function openSqliteDatabase(path: string, options: OpenSqliteOptions): SqliteDatabase {
  const { busyTimeoutMs, create = true } = options;
  const inMemory = path === ":memory:";
  const deadline = Date.now() + busyTimeoutMs;
  for (let tries = 1; ; tries++) {
    let db: Database.Database | undefined;
    try {
      const found = inMemory ? "empty" : checkHeader(path);
      if (found !== "store" && !create) throw notAStore(path, found);
      if (found === "missing") mkdirSync(dirname(path), { recursive: true });
      db = new Database(path, { fileMustExist: !create });
      // Set first: the other pragmas and the migrations may have to wait for another process.
      db.pragma(`busy_timeout = ${Math.max(0, Math.floor(busyTimeoutMs))}`);
      const tables = inMemory ? "empty" : checkTables(db, path);
      if (tables !== "store" && !create) throw notAStore(path, "empty");
      configure(db, inMemory);
      migrateSqlite(db);
      return db;
    } catch (cause) {
      db?.close();
      if (isStetError(cause)) throw cause;
      if (isCorruption(cause)) throw corruptStore(path, messageOf(cause), { cause });
      // Switching a fresh file to WAL while another process does the same can fail with
      // SQLITE_BUSY at once, without waiting on busy_timeout: open again until the deadline.
      if (isBusy(cause) && Date.now() < deadline) {
        sleepSync(Math.min(10 * tries, 100) * (0.5 + Math.random()));
        continue;
      }
      const why = isBusy(cause) ? busyMessage(path, busyTimeoutMs) : messageOf(cause);
      throw new StetError("E_STORE", `cannot open the store ${path}: ${why}`, { cause });
    }
  }
}

function configure(db: SqliteDatabase, inMemory: boolean): void {
  if (!inMemory) {
    const mode = db.pragma("journal_mode = WAL", { simple: true });
    if (mode !== "wal") {
      throw new StetError("E_STORE", `WAL journal mode unavailable (got ${String(mode)})`);
    }
  }
  // FULL: a commit is on disk when recordAttempts resolves (guarantee 1). The engine batches
  // attempts into group commits, so the fsync per commit is not per attempt.
  db.pragma("synchronous = FULL");
  db.pragma("foreign_keys = ON");
  // TEMP tables in a file, not in memory: a paged snapshot is staged in one (snapshot-stage.ts),
  // and a million samples must not be held in RAM. Set before any TEMP table exists: changing it
  // drops them. (better-sqlite3 is built with SQLITE_TEMP_STORE=1, where this pragma decides.)
  db.pragma("temp_store = FILE");
}
