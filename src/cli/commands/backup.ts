import { createHash } from "node:crypto";
import { createReadStream } from "node:fs";
import { resolve } from "node:path";
import { StetError } from "../../core/errors.js";
import { normalizeHex } from "../../evalport/read-import-file.js";
import { backupSqliteStore, restoreSqliteStore } from "../../store/sqlite-backup.js";
import { createIo } from "../io.js";
import { isPostgresUrl, storeLocation } from "../open-store.js";
import { prepareOutputFile } from "../output-file.js";

/**
 * `stet backup --store … -o file`: a consistent copy of the store (SQLite: `VACUUM INTO`, safe
 * while runs write), and its sha256, which `stet restore` checks.
 */
export async function backupCommand(flags: {
  store?: string;
  output: string;
  json?: boolean;
}): Promise<number> {
  const io = createIo(flags.json ?? false);
  const location = sqliteOnly(storeLocation(flags.store), "backup");
  await prepareOutputFile(flags.output, "--output");
  const out = resolve(flags.output);
  backupSqliteStore(location, out);
  const sha256 = await sha256File(out);
  if (flags.json) io.stdout.write(`${JSON.stringify({ file: out, sha256 })}\n`);
  else {
    io.say(`backed up ${location} to ${out}`);
    io.say(`sha256 ${sha256}`);
  }
  return 0;
}

/**
 * `stet restore <file> --sha256 <hex> --store …`: the backup as a new store, refused (with nothing
 * created) when the checksum differs, the file is no backup, or the target store already exists.
 */
export async function restoreCommand(
  file: string,
  flags: { store?: string; sha256: string; json?: boolean },
): Promise<number> {
  const io = createIo(flags.json ?? false);
  const location = sqliteOnly(storeLocation(flags.store), "restore");
  const expected = normalizeHex(flags.sha256);
  const path = resolve(file);
  const actual = await sha256File(path);
  if (actual !== expected) {
    throw new StetError(
      "E_INVALID_INPUT",
      `sha256 mismatch for ${path}: expected ${expected}, the file's bytes hash to ${actual}; nothing was restored`,
    );
  }
  const runs = restoreSqliteStore(path, location);
  if (flags.json) io.stdout.write(`${JSON.stringify({ store: location, runs, sha256: actual })}\n`);
  else io.say(`restored ${runs} run(s) from ${path} into ${location}`);
  return 0;
}

function sqliteOnly(location: string, what: string): string {
  if (isPostgresUrl(location)) {
    throw new StetError(
      "E_CONFIG",
      `stet ${what} supports SQLite stores only in this version; for PostgreSQL use pg_dump --schema of stet's schema`,
    );
  }
  return resolve(location);
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
