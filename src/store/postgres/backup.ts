import { randomBytes } from "node:crypto";
import { createReadStream } from "node:fs";
import { open, rename, rm } from "node:fs/promises";
import { basename, dirname, join } from "node:path";
import { createInterface } from "node:readline";
import pg from "pg";
import { StetError } from "../../core/errors.js";
import { MAX_DOCUMENT_DEPTH, nestsTooDeep } from "../../core/json.js";
import { migratePostgresIn } from "./migrate.js";
import { POSTGRES_MIGRATIONS } from "../migrations/postgres.js";
import { redactPassword, transaction } from "./driver.js";
import { syncDirectory } from "../../durable/write-file-atomic.js";

/** The first line of a PostgreSQL backup names this format; a SQLite backup is a SQLite file. */
export const POSTGRES_BACKUP_FORMAT = "stet-postgres-backup";

/**
 * stet's tables in dependency order (a row's references come before it), each with the schema
 * version that created it and the order its rows are written in (so a backup of an unchanged
 * store is the same bytes), and its serial column, if any.
 */
const TABLES: readonly { name: string; since: number; order: string; serial?: string }[] = [
  { name: "schema_migrations", since: 1, order: "version" },
  { name: "runs", since: 1, order: "seq", serial: "seq" },
  { name: "samples", since: 1, order: "run_id, sample_id" },
  { name: "attempts", since: 1, order: "seq", serial: "seq" },
  { name: "inflight", since: 1, order: "run_id, sample_id, epoch" },
  { name: "scorings", since: 4, order: "seq", serial: "seq" },
  { name: "journal", since: 5, order: "run_id, sample_id, epoch, attempt NULLS FIRST, step" },
  { name: "leases", since: 6, order: "run_id, sample_id, epoch" },
  { name: "workers", since: 6, order: "token" },
  { name: "store_meta", since: 10, order: "name" },
  { name: "reply_cache", since: 10, order: "call_hash, credential" },
  { name: "reviews", since: 11, order: "seq", serial: "seq" },
  { name: "rate_buckets", since: 12, order: "endpoint" },
  { name: "rate_waits", since: 12, order: "run_id, owner, endpoint" },
  { name: "batch_submissions", since: 14, order: "nonce" },
  { name: "run_figures", since: 15, order: "run_id" },
  { name: "sample_figures", since: 15, order: "run_id, sample_id" },
  { name: "rerun_requests", since: 19, order: "run_id, sample_id, epoch" },
  { name: "rerun_counts", since: 20, order: "run_id, fact" },
];

const BATCH = 1_000;

interface Header {
  format: typeof POSTGRES_BACKUP_FORMAT;
  schemaVersion: number;
  tables: string[];
  rows: Record<string, number>;
}

/** Where a PostgreSQL store lives: the driver's URL and stet's schema (else the search_path's). */
export interface PostgresTarget {
  url: string;
  schema?: string;
}

/**
 * Writes a portable dump of the stet store at `target` to `out`: a header line (format, schema
 * version, tables and their row counts), then every table's rows in dependency order as JSON
 * lines (`row_to_json`), then an end line. Read in one `REPEATABLE READ READ ONLY` transaction,
 * so it is the store as of one commit while runs go on writing; written beside `out`, fsynced and
 * renamed into place, so `out` is never partial. Returns the runs it holds.
 *
 * @example await backupPostgresStore({ url: "postgres://db/evals", schema: "stet" }, "stet.bak"); // 2
 */
export async function backupPostgresStore(target: PostgresTarget, out: string): Promise<number> {
  const pool = poolFor(target);
  const temp = join(dirname(out), `.${basename(out)}.${randomBytes(6).toString("hex")}.tmp`);
  const file = await open(temp, "wx");
  let runs: number;
  try {
    const client = await pool.connect();
    try {
      await client.query("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY");
      const version = await storedVersion(client);
      if (version === undefined) {
        throw new StetError(
          "E_STORE",
          `no stet store at ${describe(target)}: it has no stet tables`,
        );
      }
      const tables = TABLES.filter((t) => t.since <= version);
      const rows: Record<string, number> = {};
      for (const { name } of tables) {
        const { rows: counted } = await client.query<{ n: number }>(
          `SELECT count(*)::int AS n FROM "${name}"`,
        );
        rows[name] = counted[0]?.n ?? 0;
      }
      runs = rows.runs ?? 0;
      const header: Header = {
        format: POSTGRES_BACKUP_FORMAT,
        schemaVersion: version,
        tables: tables.map((t) => t.name),
        rows,
      };
      await file.write(`${JSON.stringify(header)}\n`);
      let total = 0;
      for (const { name, order } of tables) {
        await client.query(
          `DECLARE stet_backup NO SCROLL CURSOR FOR
             SELECT row_to_json(t)::text AS j FROM "${name}" t ORDER BY ${order}`,
        );
        for (;;) {
          const { rows: batch } = await client.query<{ j: string }>(
            `FETCH ${BATCH} FROM stet_backup`,
          );
          if (batch.length === 0) break;
          total += batch.length;
          await file.write(batch.map((r) => `{"table":"${name}","row":${r.j}}\n`).join(""));
        }
        await client.query("CLOSE stet_backup");
      }
      await file.write(`${JSON.stringify({ end: true, rows: total })}\n`);
      await client.query("COMMIT");
    } catch (error) {
      await client.query("ROLLBACK").catch(() => {});
      throw error;
    } finally {
      client.release();
    }
    await file.sync();
    await file.close();
    await rename(temp, out);
    syncDirectory(dirname(out));
    return runs;
  } catch (cause) {
    await file.close().catch(() => {});
    await rm(temp, { force: true });
    if (cause instanceof StetError) throw cause;
    throw new StetError(
      "E_STORE",
      `cannot back up ${describe(target)} to ${out}: ${String(cause)}`,
      { cause },
    );
  } finally {
    await pool.end();
  }
}

/**
 * Restores a `backupPostgresStore` file into the schema of `target`, which must hold no stet run
 * (absent, or created by stet but empty). In one transaction: creates the schema, migrates it to
 * the backup's schema version, inserts every row as it was (the same ids, text and JSON bytes),
 * moves the serial sequences past the restored ids, then migrates forward to this stet's version.
 * A newer backup, a malformed or truncated file, or an occupied target is refused, and then
 * nothing is created. Returns the runs restored.
 *
 * @example await restorePostgresStore("stet.bak", { url: "postgres://db/evals", schema: "copy" }); // 2
 */
export async function restorePostgresStore(file: string, target: PostgresTarget): Promise<number> {
  const header = await readHeader(file);
  const pool = poolFor(target);
  try {
    return await transaction(pool, async (tx) => {
      await tx.query(
        `SELECT pg_advisory_xact_lock(hashtext('stet migrations ' || COALESCE($1, current_schema())))`,
        [target.schema ?? null],
      );
      const existing = await storedVersion(tx);
      if (existing !== undefined) {
        const { rows } = await tx.query<{ n: number }>("SELECT count(*)::int AS n FROM runs");
        if ((rows[0]?.n ?? 0) > 0) {
          throw new StetError(
            "E_USAGE",
            `the target store ${describe(target)} already holds ${rows[0]?.n} run(s); restore into a new schema (nothing was changed)`,
          );
        }
        if (existing > header.schemaVersion) {
          throw new StetError(
            "E_USAGE",
            `the target store ${describe(target)} is empty but already at schema version ${existing}, past the backup's ${header.schemaVersion}; restore into a new schema (nothing was changed)`,
          );
        }
      }
      const schema = target.schema === undefined ? {} : { schema: target.schema };
      await migratePostgresIn(tx, {
        ...schema,
        migrations: POSTGRES_MIGRATIONS.filter((m) => m.version <= header.schemaVersion),
      });
      // The backup's own migration history (when each step was applied) replaces the one just made.
      await tx.query("DELETE FROM schema_migrations");
      await insertRows(tx, file, header);
      for (const { name, serial } of TABLES) {
        if (serial === undefined || !header.tables.includes(name)) continue;
        await tx.query(
          `SELECT setval(pg_get_serial_sequence('"${name}"', '${serial}'),
                         COALESCE(MAX("${serial}"), 0) + 1, false) FROM "${name}"`,
        );
      }
      await migratePostgresIn(tx, schema);
      return header.rows.runs ?? 0;
    });
  } catch (cause) {
    if (cause instanceof StetError) throw cause;
    throw new StetError(
      "E_STORE",
      `cannot restore into ${describe(target)}: ${String(cause)}; nothing was restored`,
      { cause },
    );
  } finally {
    await pool.end();
  }
}

/** Reads and checks the header line: this format, a schema this stet knows, known tables. */
async function readHeader(file: string): Promise<Header> {
  const lines = createInterface({ input: createReadStream(file), crlfDelay: Infinity });
  let first: string | undefined;
  for await (const line of lines) {
    first = line;
    break;
  }
  lines.close();
  const header = parseLine(file, 1, first ?? "") as Partial<Header> | undefined;
  if (header?.format !== POSTGRES_BACKUP_FORMAT || typeof header.schemaVersion !== "number") {
    throw invalid(file, 1, `its first line is not a ${POSTGRES_BACKUP_FORMAT} header`);
  }
  const known = POSTGRES_MIGRATIONS.at(-1)?.version ?? 0;
  if (header.schemaVersion > known) {
    throw new StetError(
      "E_INVALID_INPUT",
      `${file} was written by a newer stet (schema version ${header.schemaVersion}); upgrade stet to restore it; nothing was restored`,
    );
  }
  const expected = TABLES.filter((t) => t.since <= header.schemaVersion!).map((t) => t.name);
  if (JSON.stringify(header.tables) !== JSON.stringify(expected) || !header.rows) {
    throw invalid(file, 1, `its tables are not schema version ${header.schemaVersion}'s`);
  }
  return header as Header;
}

/** Inserts the rows after the header, a batch per table at a time; checks the counts and end. */
async function insertRows(tx: pg.PoolClient, file: string, header: Header): Promise<void> {
  const lines = createInterface({ input: createReadStream(file), crlfDelay: Infinity });
  const seen: Record<string, number> = {};
  let batch: string[] = [];
  let table: string | undefined;
  let ended = false;
  let n = 0;
  const flush = async () => {
    if (table === undefined || batch.length === 0) return;
    await tx.query(
      `INSERT INTO "${table}" SELECT * FROM json_populate_recordset(NULL::"${table}", $1::json)`,
      [`[${batch.join(",")}]`],
    );
    batch = [];
  };
  for await (const line of lines) {
    n += 1;
    if (n === 1) continue;
    if (ended) throw invalid(file, n, "it has lines after the end line");
    const parsed = parseLine(file, n, line) as
      { table?: unknown; row?: unknown; end?: unknown; rows?: unknown } | undefined;
    if (parsed?.end === true) {
      ended = true;
      continue;
    }
    const name = parsed?.table;
    if (
      typeof name !== "string" ||
      !header.tables.includes(name) ||
      typeof parsed?.row !== "object"
    ) {
      throw invalid(file, n, "it is not a row of one of the backup's tables");
    }
    if (name !== table) {
      await flush();
      if (table !== undefined && header.tables.indexOf(name) < header.tables.indexOf(table)) {
        throw invalid(file, n, `table ${name} comes after ${table}`);
      }
      table = name;
    }
    seen[name] = (seen[name] ?? 0) + 1;
    batch.push(JSON.stringify(parsed.row));
    if (batch.length >= BATCH) await flush();
  }
  await flush();
  if (!ended) throw invalid(file, n, "it has no end line: the file is truncated");
  for (const name of header.tables) {
    if ((seen[name] ?? 0) !== header.rows[name]) {
      throw invalid(
        file,
        n,
        `it holds ${seen[name] ?? 0} row(s) of ${name}, its header says ${header.rows[name]}`,
      );
    }
  }
}

function parseLine(file: string, n: number, line: string): unknown {
  let value: unknown;
  try {
    value = JSON.parse(line) as unknown;
  } catch {
    throw invalid(file, n, "it is not JSON");
  }
  // A row is re-serialized (JSON.stringify recurses) and sent to PostgreSQL: bound it first.
  if (nestsTooDeep(value)) {
    throw invalid(file, n, `it nests more than ${MAX_DOCUMENT_DEPTH} levels deep`);
  }
  return value;
}

function invalid(file: string, line: number, why: string): StetError {
  return new StetError(
    "E_INVALID_INPUT",
    `${file} line ${line} is not a stet PostgreSQL backup: ${why}; nothing was restored`,
  );
}

/** The highest schema version recorded in the connection's schema; undefined: no stet tables. */
async function storedVersion(db: pg.PoolClient): Promise<number | undefined> {
  // current_schema() is null while the named schema does not exist.
  const { rows } = await db.query<{ found: number }>(
    `SELECT count(*)::int AS found FROM information_schema.tables
      WHERE table_schema = current_schema() AND table_name = 'schema_migrations'`,
  );
  if (rows[0]?.found !== 1) return undefined;
  const { rows: versions } = await db.query<{ version: number | null }>(
    "SELECT MAX(version) AS version FROM schema_migrations",
  );
  return versions[0]?.version ?? 0;
}

function poolFor(target: PostgresTarget): pg.Pool {
  const { schema } = target;
  if (schema !== undefined && !/^[a-z_][a-z0-9_]{0,62}$/.test(schema)) {
    throw new StetError(
      "E_CONFIG",
      `invalid PostgreSQL schema name "${schema}": use lower-case letters, digits and _`,
    );
  }
  const pool = new pg.Pool({
    connectionString: target.url,
    max: 1,
    application_name: "stet backup",
    ...(schema === undefined ? {} : { options: `-c search_path=${schema}` }),
  });
  pool.on("error", () => {});
  return pool;
}

function describe(target: PostgresTarget): string {
  const where = redactPassword(target.url);
  return target.schema === undefined ? where : `${where} (schema ${target.schema})`;
}
