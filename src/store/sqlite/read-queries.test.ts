import Database from "better-sqlite3";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it, onTestFinished } from "vitest";
import { draft, newRun } from "../contract/fixtures.js";
import { openSqliteStore } from "./index.js";
import { outcomePageSql } from "./read-queries.js";

/** SQLite's plan of a statement, one line per step (`EXPLAIN QUERY PLAN`'s details). */
function planOf(path: string, sql: string, params: Record<string, unknown>): string[] {
  const db = new Database(path, { readonly: true });
  try {
    const rows = db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(params) as { detail: string }[];
    return rows.map((row) => row.detail);
  } finally {
    db.close();
  }
}

describe("the outcome pages' plan", () => {
  // A filtered page of a 20,000-key run took 50 s when the outcome was joined with the
  // attempts_now view: SQLite materialized the view and, under the LIMIT, scanned all of it for
  // every key. Each key's outcome attempt must be looked up by its key.
  it("looks each key's outcome attempt up by its key, for every sample and for one", async () => {
    const dir = await mkdtemp(join(tmpdir(), "stet-read-queries-"));
    onTestFinished(() => rm(dir, { recursive: true, force: true }));
    const path = join(dir, "stet.db");
    const store = openSqliteStore(path);
    const { run, owner } = await newRun(store, { ids: ["a", "b"] });
    await store.attempts.record(run.id, owner.token, [draft({ sampleId: "a", epoch: 1 })]);
    await store.close();
    const params = {
      runId: run.id,
      epochs: 1,
      sampleId: null,
      status: "error",
      scorer: null,
      result: null,
      search: null,
      limit: 50,
      offset: 0,
    };
    for (const [sample, sampleId] of [
      ["(@sampleId IS NULL OR s.sample_id = @sampleId)", null],
      ["s.sample_id = @sampleId", "a"],
    ] as const) {
      const plan = planOf(path, outcomePageSql(sample), { ...params, sampleId });
      expect(plan).not.toContainEqual(
        expect.stringMatching(/^(SCAN|MATERIALIZE) (a|attempts_now)\b/),
      );
      expect(plan).toContainEqual(
        expect.stringMatching(
          /^SEARCH a USING .*\(run_id=\? AND sample_id=\? AND epoch=\? AND attempt=\?\) LEFT-JOIN$/,
        ),
      );
    }
  });
});
