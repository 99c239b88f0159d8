import { createHash } from "node:crypto";
import { createReadStream } from "node:fs";
import { open } from "node:fs/promises";
import { resolve } from "node:path";
import { StetError } from "../../core/errors.js";
import { normalizeHex } from "../../evalport/read-import-file.js";
import { backupSqliteStore, restoreSqliteStore } from "../../store/sqlite/backup.js";
import { createIo } from "../io.js";
import { isPostgresUrl, splitSchema, storeLocation } from "../open-store.js";
import { prepareOutputFile } from "../output-file.js";

/**
 * `stet backup --store … -o file`: a consistent copy of the store, safe while runs write (SQLite:
 * `VACUUM INTO`; PostgreSQL: stet's own dump format, read in one snapshot), and its sha256, which
 * `stet restore` checks.
 */
export async function backupCommand(flags: {
  store?: string;
  output: string;
  json?: boolean;
}): Promise<number> {
  const io = createIo(flags.json ?? false);
  const location = storeLocation(flags.store);
  await prepareOutputFile(flags.output, "--output");
  const out = resolve(flags.output);
  let shown: string;
  if (isPostgresUrl(location)) {
    const { backupPostgresStore } = await import("../../store/postgres/backup.js");
    const { redactPassword } = await import("../../store/postgres/driver.js");
    await backupPostgresStore(splitSchema(location), out);
    shown = redactPassword(location);
  } else {
    shown = resolve(location);
    backupSqliteStore(shown, out);
  }
  const sha256 = await sha256File(out);
  if (flags.json) io.stdout.write(`${JSON.stringify({ file: out, sha256 })}\n`);
  else {
    io.say(`backed up ${shown} to ${out}`);
    io.say(`sha256 ${sha256}`);
  }
  return 0;
}

/**
 * `stet restore <file> --sha256 <hex> --store …`: the backup as a new store, refused (with nothing
 * created) when the checksum differs, the file is no backup of the target's kind, or the target
 * store already holds runs.
 */
export async function restoreCommand(
  file: string,
  flags: { store?: string; sha256: string; json?: boolean },
): Promise<number> {
  const io = createIo(flags.json ?? false);
  const location = storeLocation(flags.store);
  const expected = normalizeHex(flags.sha256);
  const path = resolve(file);
  const actual = await sha256File(path);
  if (actual !== expected) {
    throw new StetError(
      "E_INVALID_INPUT",
      `sha256 mismatch for ${path}: expected ${expected}, the file's bytes hash to ${actual}; nothing was restored`,
    );
  }
  const kind = await backupKind(path);
  const postgres = isPostgresUrl(location);
  let runs: number;
  let shown: string;
  if (postgres) {
    refuseKind(path, kind, "postgres", "a PostgreSQL store (postgres://)");
    const { restorePostgresStore } = await import("../../store/postgres/backup.js");
    const { redactPassword } = await import("../../store/postgres/driver.js");
    runs = await restorePostgresStore(path, splitSchema(location));
    shown = redactPassword(location);
  } else {
    refuseKind(path, kind, "sqlite", "a SQLite store");
    shown = resolve(location);
    runs = restoreSqliteStore(path, shown);
  }
  if (flags.json) io.stdout.write(`${JSON.stringify({ store: shown, runs, sha256: actual })}\n`);
  else io.say(`restored ${runs} run(s) from ${path} into ${shown}`);
  return 0;
}

type BackupKind = "sqlite" | "postgres" | "other";

/** What wrote a backup file, by its first bytes: a SQLite file, or stet's PostgreSQL dump. */
async function backupKind(path: string): Promise<BackupKind> {
  const handle = await open(path, "r");
  try {
    const { buffer, bytesRead } = await handle.read(Buffer.alloc(64), 0, 64, 0);
    const start = buffer.subarray(0, bytesRead);
    if (start.subarray(0, 16).toString("latin1") === "SQLite format 3\0") return "sqlite";
    if (start.toString("utf8").startsWith('{"format":"stet-postgres-backup"')) return "postgres";
    return "other";
  } finally {
    await handle.close();
  }
}

/**
 * A backup restores into a store of the kind that wrote it: the two formats are different files
 * (a SQLite database; stet's PostgreSQL JSON-lines dump). Moving runs across goes through
 * `stet export --format resultset` and `stet import`.
 */
function refuseKind(path: string, kind: BackupKind, wanted: BackupKind, target: string): void {
  if (kind === wanted || kind === "other") return;
  const found = kind === "sqlite" ? "a SQLite store's backup" : "a PostgreSQL store's backup";
  throw new StetError(
    "E_INVALID_INPUT",
    `${path} is ${found} and the target is ${target}: a backup restores only into a store of the ` +
      "kind that wrote it (SQLite file / stet-postgres-backup dump); move runs across by exporting " +
      "them (stet export --format resultset) into a run of the other store (stet import --into); nothing was restored",
  );
}

async function sha256File(path: string): Promise<string> {
  const hash = createHash("sha256");
  try {
    for await (const chunk of createReadStream(path)) hash.update(chunk as Buffer);
  } catch (cause) {
    const reason = (cause as NodeJS.ErrnoException).code ?? String(cause);
    throw new StetError("E_INVALID_INPUT", `cannot read ${path}: ${reason}`, { cause });
  }
  return hash.digest("hex");
}
