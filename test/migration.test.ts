import { copyFileSync, readFileSync } from "node:fs";
import { join } from "node:path";
import Database from "better-sqlite3";
import pg from "pg";
import { afterEach, describe, expect, it } from "vitest";
import { exportRow } from "../src/cli/export-rows.js";
import { foldedReport, storedReport } from "../src/engine/report.js";
import { toGraderResults } from "../src/evalport/grader-mapping.js";
import { toResult } from "../src/evalport/result-mapping.js";
import { openPostgresStore } from "../src/store/postgres/index.js";
import { openSqliteStore } from "../src/store/sqlite/index.js";
import type { Store } from "../src/store/types.js";
import { SKIP_POSTGRES, TEST_POSTGRES_URL, testSchema } from "./helpers/postgres.js";
import { tempDir } from "./helpers/temp-store.js";

/**
 * Stores written by stet 0.1.0 (schema 3, before scores became a layer of their own) opened by
 * this code: the migrations add the scorings table, the attempts_now view and nullable
 * `retries` and `usage_detail` columns, and touch no attempt; every attempt and score reads back
 * as it was stored, its retries unknown and its usage without a reused part. See test/fixtures/stores.
 */

const FIXTURES = new URL("./fixtures/stores/", import.meta.url);
const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

/** What the old release stored: every attempt's scores, status and error as the store reads them. */
const EXPECTED_SHAPE = {
  attempts: 16,
  errors: { solver: 4, scorer: 4 },
  /** Keys with a second attempt (an error re-run by a resume). */
  keysRetried: 4,
};

async function readBack(store: Store) {
  const [run] = await store.reads.listRuns();
  const attempts = await store.reads.listAttempts(run!.run.id);
  const report = await storedReport(store, run!.run);
  // Its figures, built by this first read from the old rows, give the report the fold gives.
  expect(report).toEqual(await foldedReport(store, run!.run));
  return { run: run!, attempts, scorings: await store.reads.listScorings(run!.run.id), report };
}

/**
 * The rows' columns that the old release had, after checking that every column added since
 * (migration 7's `retries`, migration 8's `usage_detail` and the limit that ended an attempt,
 * SQLite's 10 and PostgreSQL's 9, at the end) is NULL on them: those rows were never rewritten.
 */
function unchangedColumns(rows: unknown[][], before: unknown[][]): unknown[][] {
  const width = before[0]!.length;
  for (const row of rows) expect(row.slice(width)).toEqual([null, null, null]);
  return rows.map((row) => row.slice(0, width));
}

function expectOldRun(read: Awaited<ReturnType<typeof readBack>>) {
  const { attempts, scorings } = read;
  expect(attempts).toHaveLength(EXPECTED_SHAPE.attempts);
  // Their retries were never counted: unknown, so absent, and no export says otherwise.
  for (const a of attempts) {
    expect(a).not.toHaveProperty("retries");
    expect(a.usage ?? {}).not.toHaveProperty("reused");
    // The exported line (exportRow leaves absent members undefined for JSON.stringify to drop).
    expect(JSON.parse(JSON.stringify(exportRow(a)))).not.toHaveProperty("retries");
    expect(toResult(a, { epochs: 2 }).metadata?.stet).not.toHaveProperty("retries");
  }
  expect(read.report.retries).toEqual({
    total: 0,
    keysRetried: EXPECTED_SHAPE.keysRetried,
    unrecorded: EXPECTED_SHAPE.attempts,
  });
  expect(scorings).toEqual([]);
  const errors = { solver: 0, scorer: 0 };
  for (const a of attempts) if (a.error) errors[a.error.type as "solver" | "scorer"]++;
  expect(errors).toEqual(EXPECTED_SHAPE.errors);
  // A scorer error kept its output and the scores of the scorers before the one that threw.
  const q6 = attempts.find((a) => a.sampleId === "q6" && a.epoch === 1 && a.attempt === 1)!;
  expect(q6).toMatchObject({
    status: "error",
    output: "6",
    scores: [{ scorer: "exact", value: 1, answer: "6" }],
    error: { type: "scorer", scorer: "picky", message: "picky scorer threw on q6" },
  });
  // Its scores hold no entry for the scorer that threw: the export still names it.
  expect(
    toGraderResults(q6.scores, q6.error).map((g) => [g.grader_id, g.score, g.metadata?.error]),
  ).toEqual([
    ["exact", 1, undefined],
    ["picky", null, "picky scorer threw on q6"],
  ]);
  expect(read.run.counts).toMatchObject({ total: 12, scored: 8, errored: 4 });
}

describe("a store written by stet 0.1.0", () => {
  it("SQLite: migrates to the scorings schema with every attempt row byte-identical", async () => {
    const { dir, cleanup } = tempDir();
    cleanups.push(cleanup);
    const path = join(dir, "stet.db");
    copyFileSync(new URL("release-0.1.0.sqlite", FIXTURES), path);
    const rows = (db: Database.Database) =>
      db.prepare("SELECT * FROM attempts ORDER BY rowid").raw().all() as unknown[][];
    const raw = new Database(path);
    const before = rows(raw);
    expect(raw.prepare("SELECT MAX(version) AS v FROM schema_migrations").get()).toEqual({ v: 3 });
    raw.close();

    const store = openSqliteStore(path);
    cleanups.push(() => store.close());
    expectOldRun(await readBack(store));
    await store.close();

    const after = new Database(path, { readonly: true });
    cleanups.push(() => void after.close());
    expect(after.prepare("SELECT MAX(version) AS v FROM schema_migrations").get()).toEqual({
      v: 21,
    });
    expect(unchangedColumns(rows(after), before)).toEqual(before);
  });

  it.skipIf(SKIP_POSTGRES)(
    "PostgreSQL: migrates to the scorings schema with every attempt row byte-identical",
    async () => {
      const { schema, drop } = testSchema();
      cleanups.push(drop);
      const client = new pg.Client({ connectionString: TEST_POSTGRES_URL });
      await client.connect();
      cleanups.push(() => client.end());
      const dump = readFileSync(new URL("release-0.1.0.pg.sql", FIXTURES), "utf8");
      await client.query(dump.replaceAll("stet_release_fixture", schema));
      const rows = async () =>
        (
          await client.query({
            text: `SELECT * FROM "${schema}".attempts ORDER BY seq`,
            rowMode: "array",
          })
        ).rows;
      const before = await rows();
      expect(before).toHaveLength(EXPECTED_SHAPE.attempts);

      const store = openPostgresStore(TEST_POSTGRES_URL, { schema });
      cleanups.push(() => store.close());
      expectOldRun(await readBack(store));
      const version = await client.query(
        `SELECT MAX(version) AS v FROM "${schema}".schema_migrations`,
      );
      expect(version.rows[0]).toEqual({ v: 20 });
      expect(unchangedColumns(await rows(), before)).toEqual(before);
    },
  );
});
