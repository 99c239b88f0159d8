import Database from "better-sqlite3";
import { mkdirSync } from "node:fs";
import { dirname } from "node:path";
import { StetError, isStetError } from "../core/errors.js";
import { migrateSqlite } from "./migrate-sqlite.js";
import { messageOf } from "./rows.js";
import { busyMessage, isBusy } from "./sqlite-lock-holder.js";
import type { SqliteDatabase } from "./sqlite-driver.js";

/**
 * Opens (creating it and its directory if missing) a SQLite database in WAL mode with durable
 * commits and foreign keys, and migrates it; retries while another process is doing the same.
 *
 * @example const db = openSqliteDatabase(".stet/stet.db", 10_000);
 */
export function openSqliteDatabase(path: string, busyTimeoutMs: number): SqliteDatabase {
  const inMemory = path === ":memory:";
  const deadline = Date.now() + busyTimeoutMs;
  for (let tries = 1; ; tries++) {
    let db: Database.Database | undefined;
    try {
      if (!inMemory) mkdirSync(dirname(path), { recursive: true });
      db = new Database(path);
      configure(db, busyTimeoutMs, inMemory);
      migrateSqlite(db);
      return db;
    } catch (cause) {
      db?.close();
      if (isStetError(cause)) throw cause;
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

/** Blocks the thread for `ms`: opening a store is synchronous, and this is only its retry pause. */
function sleepSync(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

function configure(db: SqliteDatabase, busyTimeoutMs: number, inMemory: boolean): void {
  // Set first: the other pragmas and the migrations may have to wait for another process.
  db.pragma(`busy_timeout = ${Math.max(0, Math.floor(busyTimeoutMs))}`);
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
}
