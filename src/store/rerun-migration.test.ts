import Database from "better-sqlite3";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { describe, expect, it, onTestFinished } from "vitest";
import { SKIP_POSTGRES, TEST_POSTGRES_URL, testSchema } from "../../test/helpers/postgres.js";
import type { RerunRequest } from "../core/types.js";
import { newRun } from "./contract/fixtures.js";
import { openPostgresStore } from "./postgres/index.js";
import { openSqliteStore } from "./sqlite/index.js";
import type { Store } from "./types.js";

// SQLite migration 20 (PostgreSQL 19) moves the re-run requests an older stet kept in a run's
// config (`config.rerun`) into their own table, and migration 21 (PostgreSQL 20) counts them by
// what places their keys in a plan. Each case makes a store, writes such a config the way the
// older stet stored it, takes both migrations back off, and opens the store again.

/** What an older stet's config held: a key asked twice (its last entry is the one planned). */
const OLD_REQUESTS = [
  { sampleId: "s2", epoch: 1, after: 1 },
  { sampleId: "s1", epoch: 2, after: 3 },
  { sampleId: "s2", epoch: 1, after: 4 },
];
const MOVED: RerunRequest[] = [
  { sampleId: "s1", epoch: 2, after: 3 },
  { sampleId: "s2", epoch: 1, after: 4 },
];
/** The moved requests as counted: both open, their keys without an attempt. */
const COUNTED = [{ held: null, heldScorer: false, flying: false, later: "none", keys: 2 }];

async function requests(store: Store, runId: string): Promise<RerunRequest[]> {
  const all: RerunRequest[] = [];
  for await (const page of store.reads.rerunPages(runId)) all.push(...page);
  return all;
}

describe("the re-run requests migrations", () => {
  it("SQLite: moves config.rerun into rerun_requests, one row a key, and out of the config", async () => {
    const dir = await mkdtemp(join(tmpdir(), "stet-rerun-migration-"));
    onTestFinished(() => rm(dir, { recursive: true, force: true }));
    const path = join(dir, "stet.db");
    const store = openSqliteStore(path);
    const asked = await newRun(store, { id: "asked" });
    await newRun(store, { id: "plain" });
    await store.close();

    const raw = new Database(path);
    const plainBefore = raw.prepare("SELECT config FROM runs WHERE id = 'plain'").pluck().get();
    raw
      .prepare("UPDATE runs SET config = json_set(config, '$.rerun', json(?)) WHERE id = 'asked'")
      .run(JSON.stringify(OLD_REQUESTS));
    raw.exec(`DROP TABLE rerun_requests; DROP TABLE rerun_counts;
      DELETE FROM schema_migrations WHERE version IN (20, 21)`);
    raw.close();

    const again = openSqliteStore(path);
    onTestFinished(() => again.close());
    expect(await requests(again, "asked")).toEqual(MOVED);
    expect(await requests(again, "plain")).toEqual([]);
    expect(await again.reads.rerunFacts("asked")).toEqual(COUNTED);
    expect(await again.reads.rerunFacts("plain")).toEqual([]);
    expect((await again.runs.get("asked"))?.config).toEqual(asked.run.config);
    const check = new Database(path, { readonly: true });
    onTestFinished(() => void check.close());
    expect(check.prepare("SELECT config FROM runs WHERE id = 'plain'").pluck().get()).toBe(
      plainBefore,
    );
    expect(check.prepare("SELECT config FROM runs WHERE id = 'asked'").pluck().get()).not.toMatch(
      /rerun/,
    );
  });

  it.skipIf(SKIP_POSTGRES)(
    "PostgreSQL: moves config.rerun into rerun_requests, one row a key, and out of the config",
    async () => {
      const { schema, drop } = testSchema();
      onTestFinished(drop);
      const store = openPostgresStore(TEST_POSTGRES_URL, { schema });
      const asked = await newRun(store, { id: "asked" });
      await newRun(store, { id: "plain" });
      await store.close();

      const pool = new pg.Pool({
        connectionString: TEST_POSTGRES_URL,
        options: `-c search_path=${schema}`,
      });
      const configOf = async (id: string) =>
        (await pool.query<{ config: string }>("SELECT config FROM runs WHERE id = $1", [id]))
          .rows[0]!.config;
      const plainBefore = await configOf("plain");
      const withRequests = { ...JSON.parse(await configOf("asked")), rerun: OLD_REQUESTS };
      await pool.query("UPDATE runs SET config = $1 WHERE id = 'asked'", [
        JSON.stringify(withRequests),
      ]);
      await pool.query("DROP TABLE rerun_requests; DROP TABLE rerun_counts");
      await pool.query("DELETE FROM schema_migrations WHERE version IN (19, 20)");

      const again = openPostgresStore(TEST_POSTGRES_URL, { schema });
      onTestFinished(async () => {
        await again.close();
        await pool.end();
      });
      expect(await requests(again, "asked")).toEqual(MOVED);
      expect(await requests(again, "plain")).toEqual([]);
      expect(await again.reads.rerunFacts("asked")).toEqual(COUNTED);
      expect(await again.reads.rerunFacts("plain")).toEqual([]);
      expect((await again.runs.get("asked"))?.config).toEqual(asked.run.config);
      expect(await configOf("plain")).toBe(plainBefore);
      expect(await configOf("asked")).not.toMatch(/rerun/);
    },
  );
});
