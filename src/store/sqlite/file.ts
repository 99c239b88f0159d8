import { closeSync, openSync, readSync, statSync } from "node:fs";
import { StetError } from "../../core/errors.js";
import { shellQuote } from "../../core/shell-quote.js";
import type { SqliteDatabase } from "./driver.js";

/** What a store path holds before stet writes to it. */
export type StoreFileState = "missing" | "empty" | "store";

const MAGIC = Buffer.from("SQLite format 3\0", "latin1");
const HEADER_BYTES = 100;

/** The pauses before a store file that looks cut short is read again (see checkHeader). */
const RECHECK_MS = [50, 100, 200];

/**
 * Reads a store file's SQLite header without opening it: a file that is not SQLite, or shorter
 * than its header says with no WAL to make up the rest (cut short by a partial copy, or a disk
 * that lost its end), is refused as corrupt before SQLite sees it. Returns "missing", "empty" (0 bytes) or "store" (a SQLite file, whose
 * tables `checkTables` judges once it is open).
 *
 * A sound store looks cut short for a moment while another process checkpoints it (a stet
 * process closing it): the checkpoint writes page 1, with the new page count, before the pages
 * that lengthen the file, and deletes the WAL after. So a file is cut short only when it still
 * is after `pause` has waited 50, 100 and 200 ms (350 ms more before a corrupt file's error).
 *
 * @example checkHeader(".stet/stet.db") // "store"
 */
export function checkHeader(path: string, pause: (ms: number) => void = sleepSync): StoreFileState {
  let read = readHeader(path);
  for (const ms of RECHECK_MS) {
    if (typeof read === "string") return read;
    pause(ms);
    read = readHeader(path);
  }
  if (typeof read === "string") return read;
  throw corruptStore(path, read.cutShort);
}

/** The file's state as its header and size say, or how it is cut short. */
function readHeader(path: string): StoreFileState | { cutShort: string } {
  let size: number;
  try {
    size = statSync(path).size;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return "missing";
    throw error;
  }
  if (size === 0) return "empty";
  const header = readStart(path);
  if (header.length < HEADER_BYTES || !header.subarray(0, MAGIC.length).equals(MAGIC)) {
    throw corruptStore(path, "it is not a SQLite database");
  }
  const raw = header.readUInt16BE(16);
  const pageSize = raw === 1 ? 65_536 : raw;
  const pages = header.readUInt32BE(28);
  // The page count is valid when the header's change counter matches its version-valid-for.
  const counted = header.readUInt32BE(24) === header.readUInt32BE(92);
  // A WAL with frames holds pages the file may not have yet: a checkpoint that a full disk cut
  // off leaves the file shorter than its header says, yet SQLite reads the pages from the WAL.
  if (counted && size < pageSize * pages && !hasFrames(`${path}-wal`)) {
    return { cutShort: `it is cut short: ${size} bytes where its header says ${pageSize * pages}` };
  }
  return "store";
}

/** Blocks the thread for `ms`: opening a store is synchronous, and this is only its retry pause. */
export function sleepSync(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

/**
 * Judges an open database's tables before anything is written to it: none is a store to be
 * ("empty"), stet's own are a store, and any others are another application's database, which
 * stet refuses to add its tables to.
 */
export function checkTables(db: SqliteDatabase, path: string): StoreFileState {
  const tables = db
    .prepare<{ name: string }>("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
    .all()
    .map((t) => t.name);
  if (tables.length === 0) return "empty";
  const columns = db
    .prepare<{ name: string }>("SELECT name FROM pragma_table_info('schema_migrations')")
    .all()
    .map((c) => c.name);
  if (["version", "name", "applied_at"].every((c) => columns.includes(c))) return "store";
  const shown = tables.slice(0, 5).join(", ") + (tables.length > 5 ? ", …" : "");
  throw new StetError(
    "E_STORE",
    `${path} is not a stet store: it is a SQLite database with tables that are not stet's (${shown}); ` +
      "stet leaves it as it is. Give stet a file of its own.",
  );
}

/** True for SQLite's "this file is damaged or not a database" errors. */
export function isCorruption(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return code === "SQLITE_CORRUPT" || code === "SQLITE_NOTADB";
}

/**
 * `E_STORE_CORRUPT` for a store file that is not an intact SQLite database: the file, what is
 * wrong, and what to do (see the damage, restore a copy). `opening` (the default) adds that
 * nothing was written, which holds for a file refused on open, not for one found damaged later.
 *
 * @example corruptStore("/data/s.db", "it is not a SQLite database")
 */
export function corruptStore(
  path: string,
  problem: string,
  options: { cause?: unknown; opening?: boolean } = {},
): StetError {
  const untouched = options.opening === false ? "" : "; nothing was written to it";
  return new StetError(
    "E_STORE_CORRUPT",
    `${path} is not an intact stet store: ${problem}${untouched}.\n` +
      `  To see the damage: sqlite3 ${shellQuote(path)} "PRAGMA integrity_check"\n` +
      "  To recover: restore the file from a copy (a backup of it), or give stet another file.",
    options.cause === undefined ? {} : { cause: options.cause },
  );
}

/**
 * Why a command that only reads a store will not open `path`: there is no store there, or only
 * an empty file that a writing command (`stet run`) would make one of.
 */
export function notAStore(path: string, state: "missing" | "empty"): StetError {
  const message =
    state === "missing"
      ? `no store at ${path}: no run was started with it (nothing was created)`
      : `${path} is empty, not a stet store yet (stet run makes one of it); nothing was written to it`;
  return new StetError("E_STORE", message, { details: { path, state } });
}

function hasFrames(wal: string): boolean {
  try {
    return statSync(wal).size > 0;
  } catch {
    return false;
  }
}

function readStart(path: string): Buffer {
  const fd = openSync(path, "r");
  try {
    const buffer = Buffer.alloc(HEADER_BYTES);
    const read = readSync(fd, buffer, 0, HEADER_BYTES, 0);
    return buffer.subarray(0, read);
  } finally {
    closeSync(fd);
  }
}
