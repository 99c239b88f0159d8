import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli, startCli } from "./helpers/cli.js";
import { evalProject } from "./helpers/eval-project.js";
import {
  SKIP_POSTGRES,
  TEST_POSTGRES_URL,
  testSchema,
  testSchemaPool,
} from "./helpers/postgres.js";
import { until } from "./helpers/wait.js";
import { BACKUP_EVAL, exportsOf, sha256Of } from "./helpers/backup-eval.js";

// `stet backup` / `stet restore` of PostgreSQL stores through the real CLI (dist/: `npm run
// build` first), on real PostgreSQL, a fresh schema per store.
const REPO = fileURLToPath(new URL("../", import.meta.url));

let project: ReturnType<typeof evalProject>;
let source: { schema: string; drop: () => Promise<void> };
let sourceUrl: string;
let sourceDb: pg.Pool;
const runs: string[] = [];

function urlOf(schema: string): string {
  const url = new URL(TEST_POSTGRES_URL);
  url.searchParams.set("schema", schema);
  return url.toString();
}

function cli(args: string[], env: NodeJS.ProcessEnv = {}) {
  return runCli(args, { cwd: project.dir, env });
}

async function backup(store: string, file: string): Promise<string> {
  const result = await cli(["backup", "--store", store, "-o", file]);
  expect(result.stderr).toBe("");
  expect(result.code).toBe(0);
  const sha = /sha256 ([0-9a-f]{64})/.exec(result.stdout)?.[1];
  expect(sha).toBe(sha256Of(file));
  return sha!;
}

async function schemaExists(schema: string): Promise<boolean> {
  const { rows } = await sourceDb.query("SELECT 1 FROM pg_namespace WHERE nspname = $1", [schema]);
  return rows.length === 1;
}

/** Every table's rows of a schema, as text, in a fixed order: to show a store unchanged. */
async function contentOf(db: pg.Pool): Promise<string[]> {
  const out: string[] = [];
  for (const table of ["schema_migrations", "runs", "samples", "attempts", "scorings", "journal"]) {
    const { rows } = await db.query<{ j: string }>(
      `SELECT row_to_json(t)::text AS j FROM "${table}" t ORDER BY 1`,
    );
    out.push(...rows.map((r) => `${table} ${r.j}`));
  }
  return out;
}

beforeAll(async () => {
  if (SKIP_POSTGRES) return;
  if (!existsSync(join(REPO, "dist/cli/bin.js"))) throw new Error("run `npm run build` first");
  project = evalProject({ "backup.mjs": BACKUP_EVAL });
  source = testSchema();
  sourceUrl = urlOf(source.schema);
  sourceDb = new pg.Pool({
    connectionString: TEST_POSTGRES_URL,
    options: `-c search_path=${source.schema}`,
  });
  for (const env of [{}, { SAMPLES: "30" }]) {
    const result = await cli(["run", "backup.mjs", "--store", sourceUrl, "--json"], env);
    expect(result.code).toBe(0);
    runs.push((JSON.parse(result.stdout) as { runId: string }).runId);
  }
}, 60_000);
afterAll(async () => {
  if (SKIP_POSTGRES) return;
  await sourceDb.end();
  await source.drop();
  project.cleanup();
});

describe.skipIf(SKIP_POSTGRES)("stet backup and restore (PostgreSQL)", () => {
  it("round-trips every run byte for byte; a resume of the restored complete run executes nothing", async () => {
    const file = join(project.dir, "round.pgbak");
    const sha = await backup(sourceUrl, file);
    const header = JSON.parse(readFileSync(file, "utf8").split("\n")[0]!) as {
      format: string;
      schemaVersion: number;
      rows: Record<string, number>;
    };
    expect(header).toMatchObject({
      format: "stet-postgres-backup",
      rows: { runs: 2, attempts: 50 },
    });

    const { url, db } = testSchemaPool();
    const restore = await cli(["restore", file, "--sha256", sha, "--store", url]);
    expect(restore.stderr).toBe("");
    expect(restore.code).toBe(0);
    expect(restore.stdout).toContain("restored 2 run(s)");
    expect(await exportsOf(cli, runs, url)).toEqual(await exportsOf(cli, runs, sourceUrl));
    expect(await contentOf(db)).toEqual(await contentOf(sourceDb));
    // A backup of the restored store is the same bytes as the one it came from.
    expect(await backup(url, join(project.dir, "again.pgbak"))).toBe(sha);

    const resumed = await cli(["resume", runs[1]!, "--store", url, "--json"]);
    expect(resumed.code).toBe(0);
    expect(JSON.parse(resumed.stdout)).toMatchObject({
      executed: 0,
      counts: { total: 30, scored: 30 },
    });
  }, 60_000);

  it("refuses a wrong sha256, a newer schema and a SQLite backup, and creates no schema", async () => {
    const file = join(project.dir, "refuse.pgbak");
    await backup(sourceUrl, file);
    const { schema, drop } = testSchema();
    const target = urlOf(schema);
    try {
      const wrong = await cli(["restore", file, "--sha256", "0".repeat(64), "--store", target]);
      expect(wrong.code).toBe(1);
      expect(wrong.stderr).toContain("sha256 mismatch");
      expect(wrong.stderr).toContain("nothing was restored");
      expect(await schemaExists(schema)).toBe(false);

      const newer = join(project.dir, "newer.pgbak");
      const lines = readFileSync(file, "utf8").split("\n");
      const header = JSON.parse(lines[0]!) as Record<string, unknown>;
      writeFileSync(
        newer,
        [JSON.stringify({ ...header, schemaVersion: 999 }), ...lines.slice(1)].join("\n"),
      );
      const future = await cli(["restore", newer, "--sha256", sha256Of(newer), "--store", target]);
      expect(future.code).toBe(1);
      expect(future.stderr).toContain("written by a newer stet (schema version 999)");
      expect(await schemaExists(schema)).toBe(false);

      // A truncated dump (its last row and end line gone) fails inside the transaction.
      const cut = join(project.dir, "cut.pgbak");
      writeFileSync(cut, `${lines.slice(0, -3).join("\n")}\n`);
      const truncated = await cli(["restore", cut, "--sha256", sha256Of(cut), "--store", target]);
      expect(truncated.code).toBe(1);
      expect(truncated.stderr).toContain("truncated");
      expect(await schemaExists(schema)).toBe(false);

      const sqlite = join(project.dir, "lite.db");
      expect((await cli(["run", "backup.mjs", "--store", sqlite])).code).toBe(0);
      const liteBackup = join(project.dir, "lite.bak");
      const liteSha = await backup(sqlite, liteBackup);
      const across = await cli(["restore", liteBackup, "--sha256", liteSha, "--store", target]);
      expect(across.code).toBe(1);
      expect(across.stderr).toContain("SQLite store's backup and the target is a PostgreSQL store");
      expect(await schemaExists(schema)).toBe(false);
      const back = await cli([
        "restore",
        file,
        "--sha256",
        sha256Of(file),
        "--store",
        join(project.dir, "x.db"),
      ]);
      expect(back.code).toBe(1);
      expect(back.stderr).toContain("PostgreSQL store's backup and the target is a SQLite store");
      expect(existsSync(join(project.dir, "x.db"))).toBe(false);
    } finally {
      await drop();
    }
  }, 60_000);

  it("restores an older schema version's dump and migrates it forward", async () => {
    const file = join(project.dir, "current.pgbak");
    await backup(sourceUrl, file);
    // The same store as schema version 5 wrote it: no leases/workers tables, no step 6, and
    // no step 7 (attempts' and scorings' retries), no step 8 (their and the journal's usage_detail),
    // no step 9 (attempts' limit_hit), no step 10 (the reply cache's tables), no step 11 (reviews),
    // no step 12 (the rate limits' tables), no step 13 (runs' labels), no step 14 (batch
    // submissions), no step 15 (rate figures' waiting requests), no step 16 (run figures: built
    // again by the first read of each run), no step 17 (the journal's input prefixes), no step 19
    // (re-run requests beside their runs), no step 20 (their counts).
    const lines = readFileSync(file, "utf8").trimEnd().split("\n");
    const header = JSON.parse(lines[0]!) as {
      schemaVersion: number;
      tables: string[];
      rows: Record<string, number>;
    };
    expect(header.schemaVersion).toBe(20);
    const dropped = (line: string) => {
      const row = JSON.parse(line) as { table?: string; row?: { version?: number } };
      return (
        row.table === "leases" ||
        row.table === "workers" ||
        row.table === "store_meta" ||
        row.table === "reply_cache" ||
        row.table === "reviews" ||
        row.table === "rate_buckets" ||
        row.table === "rate_waits" ||
        row.table === "batch_submissions" ||
        row.table === "run_figures" ||
        row.table === "sample_figures" ||
        row.table === "rerun_requests" ||
        row.table === "rerun_counts" ||
        (row.table === "schema_migrations" && (row.row?.version ?? 0) >= 6)
      );
    };
    const withoutRetries = (line: string) => {
      const entry = JSON.parse(line) as { table?: string; row?: Record<string, unknown> };
      const table = entry.table;
      if (table === "runs" && entry.row) {
        delete entry.row.labels;
        return JSON.stringify(entry);
      }
      if ((table !== "attempts" && table !== "scorings" && table !== "journal") || !entry.row) {
        return line;
      }
      if (table !== "journal") delete entry.row.retries;
      if (table === "attempts") delete entry.row.limit_hit;
      delete entry.row.usage_detail;
      if (table === "journal") {
        delete entry.row.prefix_step;
        delete entry.row.prefix_count;
      }
      return JSON.stringify(entry);
    };
    const body = lines
      .slice(1, -1)
      .filter((line) => !dropped(line))
      .map(withoutRetries);
    const rows: Record<string, number> = {
      ...header.rows,
      schema_migrations: header.rows.schema_migrations! - 15,
    };
    delete rows.leases;
    delete rows.workers;
    delete rows.store_meta;
    delete rows.reply_cache;
    delete rows.reviews;
    delete rows.rate_buckets;
    delete rows.rate_waits;
    delete rows.batch_submissions;
    delete rows.run_figures;
    delete rows.sample_figures;
    delete rows.rerun_requests;
    delete rows.rerun_counts;
    const older = join(project.dir, "v5.pgbak");
    const v5 = { ...header, schemaVersion: 5, tables: header.tables.slice(0, -12), rows };
    writeFileSync(
      older,
      [JSON.stringify(v5), ...body, JSON.stringify({ end: true, rows: body.length }), ""].join(
        "\n",
      ),
    );

    const { url, db } = testSchemaPool();
    const restore = await cli(["restore", older, "--sha256", sha256Of(older), "--store", url]);
    expect(restore.stderr).toBe("");
    expect(restore.code).toBe(0);
    const { rows: versions } = await db.query<{ version: number }>(
      "SELECT version FROM schema_migrations ORDER BY version",
    );
    expect(versions.map((v) => v.version)).toEqual([
      1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20,
    ]);
    // A store from before retries were counted exports as it did then: the same as today's,
    // less the retry counts its rows never had.
    const restored = await exportsOf(cli, runs, url);
    // Its JSONL has no retry count at all (unknown), its CSV an empty column.
    expect(restored[0]).not.toMatch(/"retries"/);
    expect(restored.map(dropRetries)).toEqual(
      (await exportsOf(cli, runs, sourceUrl)).map(dropRetries),
    );
  }, 60_000);

  it("restores into a schema stet created that holds no run yet", async () => {
    const file = join(project.dir, "empty-target.pgbak");
    const sha = await backup(sourceUrl, file);
    const { url, db } = testSchemaPool();
    // A command that writes creates stet's tables on first use; this one then finds no run.
    expect((await cli(["cancel", "r_none", "--store", url])).code).not.toBe(0);
    const { rows } = await db.query<{ n: number }>("SELECT count(*)::int AS n FROM runs");
    expect(rows[0]?.n).toBe(0);
    const restore = await cli(["restore", file, "--sha256", sha, "--store", url]);
    expect(restore.stderr).toBe("");
    expect(restore.code).toBe(0);
    expect(await exportsOf(cli, runs, url)).toEqual(await exportsOf(cli, runs, sourceUrl));
  }, 60_000);

  it("refuses a target that holds runs and leaves it unchanged", async () => {
    const file = join(project.dir, "occupied.pgbak");
    const sha = await backup(sourceUrl, file);
    const before = await contentOf(sourceDb);
    const occupied = await cli(["restore", file, "--sha256", sha, "--store", sourceUrl]);
    expect(occupied.code).toBe(2);
    expect(occupied.stderr).toContain("already holds 2 run(s)");
    expect(await contentOf(sourceDb)).toEqual(before);
  }, 30_000);

  it("takes a consistent copy while a run is writing; the copy resumes to exactly the missing keys", async () => {
    const busy = testSchemaPool();
    const child = startCli(
      ["run", "backup.mjs", "--store", busy.url, "--concurrency", "4", "--run-id", "r_busy"],
      // 300 samples of 100 ms, 4 at a time: 7.5 s of writing, so the backup, however slowly
      // its process starts on a loaded machine, is taken while the run writes.
      { cwd: project.dir, env: { SAMPLES: "300", PAUSE_MS: "100" } },
    );
    const committed = async () => {
      try {
        const { rows } = await busy.db.query<{ n: number }>(
          "SELECT count(*)::int AS n FROM attempts",
        );
        return rows[0]?.n ?? 0;
      } catch {
        return 0; // the schema's tables are not there yet
      }
    };
    await until(async () => (await committed()) >= 20, "20 committed attempts");
    const file = join(project.dir, "busy.pgbak");
    const sha = await backup(busy.url, file);
    const finished = await child.done;
    expect(finished.code).toBe(0);
    const copied = (
      JSON.parse(readFileSync(file, "utf8").split("\n")[0]!) as {
        rows: { attempts: number };
      }
    ).rows.attempts;
    expect(copied).toBeGreaterThanOrEqual(20);
    expect(copied).toBeLessThan(300);

    const target = testSchemaPool();
    expect((await cli(["restore", file, "--sha256", sha, "--store", target.url])).code).toBe(0);
    const { rows } = await target.db.query<{ status: string }>("SELECT status FROM attempts");
    expect(rows).toHaveLength(copied);
    for (const row of rows) expect(row).toMatchObject({ status: "scored" });
    const resumed = await cli(["resume", "r_busy", "--store", target.url, "--json"], {
      SAMPLES: "300",
    });
    expect(resumed.code).toBe(0);
    expect(JSON.parse(resumed.stdout)).toMatchObject({
      executed: 300 - copied,
      counts: { total: 300, scored: 300 },
    });
  }, 120_000);
});

/** An export (JSONL, ResultSet or CSV) without its retry counts: what a store from before them exports. */
function dropRetries(text: string): string {
  if (text.startsWith("{\n")) {
    const doc = JSON.parse(text) as {
      results: { metadata?: { stet?: Record<string, unknown> } }[];
    };
    for (const result of doc.results) delete result.metadata?.stet?.retries;
    return `${JSON.stringify(doc, null, 2)}\n`;
  }
  if (text.startsWith("{")) {
    return text
      .split("\n")
      .map((line) => {
        if (line === "") return line;
        const row = JSON.parse(line) as Record<string, unknown>;
        delete row.retries;
        return JSON.stringify(row);
      })
      .join("\n");
  }
  const lines = text.split("\n");
  const column = lines[0]!.split(",").indexOf("retries");
  return lines
    .map((line) =>
      line === ""
        ? line
        : line
            .split(",")
            .filter((_, i) => i !== column)
            .join(","),
    )
    .join("\n");
}
