import Database from "better-sqlite3";
import { randomBytes } from "node:crypto";
import {
  closeSync,
  copyFileSync,
  fsyncSync,
  openSync,
  renameSync,
  rmSync,
  statSync,
} from "node:fs";
import { basename, dirname, join, resolve } from "node:path";
import { StetError } from "../../core/errors.js";
import { syncDirectory } from "../../durable/write-file-atomic.js";
import { refuseNewerSchema } from "../migrations/newer-schema.js";
import { SQLITE_MIGRATIONS } from "../migrations/sqlite.js";
import type { SqliteDatabase } from "./driver.js";
import { checkHeader, checkTables, isCorruption } from "./file.js";
import { openSqliteDatabase } from "./open.js";

const BUSY_MS = 10_000;

/**
 * Writes a consistent copy of the SQLite store at `path` to `out` with `VACUUM INTO`: one read
 * transaction, so the copy is the store as of one commit even while runs write to it (WAL lets
 * them go on meanwhile); written beside `out` and renamed into place, so `out` is never partial.
 *
 * @example backupSqliteStore(".stet/stet.db", "backup.db");
 */
export function backupSqliteStore(path: string, out: string): void {
  refuseOwnFile(path, out);
  const db = openSqliteDatabase(path, { busyTimeoutMs: BUSY_MS, create: false });
  const temp = join(dirname(out), `.${basename(out)}.${randomBytes(6).toString("hex")}.tmp`);
  try {
    db.prepare("VACUUM INTO ?").run(temp);
    fsyncFile(temp);
    renameSync(temp, out);
    syncDirectory(dirname(out));
  } catch (cause) {
    rmSync(temp, { force: true });
    throw new StetError("E_STORE", `cannot back up ${path} to ${out}: ${String(cause)}`, {
      cause,
    });
  } finally {
    db.close();
  }
}

/**
 * Refuses a backup written over the store it copies, or over one of its side files: the copy
 * renamed over the live database would cut it off from its write-ahead log and from every
 * process that has it open.
 */
function refuseOwnFile(path: string, out: string): void {
  const target = resolve(out);
  const own = ["", "-wal", "-shm", "-journal"].map((suffix) => resolve(`${path}${suffix}`));
  if (own.includes(target) || sameFile(path, target)) {
    throw new StetError(
      "E_USAGE",
      `cannot back up ${path} to ${out}: that is the store itself (or one of its files); give the backup a file of its own (nothing was written)`,
    );
  }
}

function sameFile(a: string, b: string): boolean {
  try {
    const [x, y] = [statSync(a), statSync(b)];
    return x.dev === y.dev && x.ino === y.ino;
  } catch {
    return false;
  }
}

/**
 * Restores a backup (`backupSqliteStore`'s file) as the store at `target`, which must not exist
 * yet (or be an empty file): the backup is checked first (a SQLite stet store, intact, of a
 * schema this stet knows) and copied beside the target, then renamed into place and opened, which
 * applies any newer migrations. On any refusal nothing is created. Returns the runs restored.
 *
 * @example restoreSqliteStore("backup.db", "restored.db") // 2
 */
export function restoreSqliteStore(file: string, target: string): number {
  const state = checkHeader(target);
  if (state === "store") {
    throw new StetError(
      "E_USAGE",
      `the target store ${target} already exists; restore into a new location (nothing was changed)`,
    );
  }
  const runs = checkBackup(file);
  const temp = join(dirname(target), `.${basename(target)}.${randomBytes(6).toString("hex")}.tmp`);
  try {
    copyFileSync(file, temp);
    fsyncFile(temp);
    renameSync(temp, target);
    syncDirectory(dirname(target));
  } catch (cause) {
    rmSync(temp, { force: true });
    throw new StetError("E_STORE", `cannot restore into ${target}: ${String(cause)}`, { cause });
  }
  openSqliteDatabase(target, { busyTimeoutMs: BUSY_MS, create: false }).close();
  return runs;
}

/** Refuses a file that is not an intact stet SQLite store of a known schema; counts its runs. */
function checkBackup(file: string): number {
  const notBackup = (why: string) =>
    new StetError(
      "E_INVALID_INPUT",
      `${file} is not a stet SQLite backup: ${why}; nothing was restored`,
    );
  const found = checkHeader(file);
  if (found !== "store") throw notBackup(`it is ${found}`);
  const db: SqliteDatabase = new Database(file, { readonly: true, fileMustExist: true });
  try {
    return countBackupRuns(db, file, notBackup);
  } catch (error) {
    // A header that looks like SQLite's over pages that are not (a file cut or forged).
    if (isCorruption(error)) throw notBackup(`it is damaged: ${(error as Error).message}`);
    throw error;
  } finally {
    db.close();
  }
}

/** The runs of an open backup, after checking it is a stet store of a schema this stet knows. */
function countBackupRuns(
  db: SqliteDatabase,
  file: string,
  notBackup: (why: string) => StetError,
): number {
  if (checkTables(db, file) !== "store") throw notBackup("it has no stet tables");
  const integrity = db.pragma("integrity_check", { simple: true });
  if (integrity !== "ok") throw notBackup(`its integrity check says ${String(integrity)}`);
  const version = db
    .prepare<{ version: number | null }>("SELECT MAX(version) AS version FROM schema_migrations")
    .get()?.version;
  try {
    refuseNewerSchema(version ?? 0, SQLITE_MIGRATIONS);
  } catch (error) {
    throw new StetError(
      "E_INVALID_INPUT",
      `${file} was written by a newer stet (schema version ${version}); upgrade stet to restore it; nothing was restored`,
      { cause: error },
    );
  }
  return db.prepare<{ n: number }>("SELECT COUNT(*) AS n FROM runs").get()?.n ?? 0;
}

/** fsyncs a file's data; a failure throws (the copy is not known to be durable). */
export function fsyncFile(path: string): void {
  const fd = openSync(path, "r");
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}
