import Database from "better-sqlite3";
import { execFile, spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterEach, beforeEach, describe, expect, it, onTestFinished } from "vitest";
import { until } from "../../test/helpers/wait.js";
import { describeStoreContract } from "./contract.js";
import {
  draft,
  fingerprintOf,
  newRun,
  owner,
  runConfig,
  sampleRecords,
  scoringOf,
} from "./contract/fixtures.js";
import { migrateSqlite } from "./sqlite/migrate.js";
import { SQLITE_MIGRATIONS } from "./migrations/sqlite.js";
import { createSqliteStore, openSqliteStore } from "./sqlite/index.js";
import { openSqliteDatabase } from "./sqlite/open.js";
import { bucketSpec } from "../core/rate-limits.js";
import { processState, writeLockHolder } from "./sqlite/lock-holder.js";
import type { SqliteDatabase } from "./sqlite/driver.js";
import type { Store } from "./types.js";

describeStoreContract("sqlite", async () => {
  const dir = await mkdtemp(join(tmpdir(), "stet-store-"));
  const path = join(dir, "stet.db");
  const store = openSqliteStore(path);
  const opened: Store[] = [store];
  const connect = async () => {
    const another = openSqliteStore(path);
    opened.push(another);
    return another;
  };
  return {
    store,
    connect,
    cleanup: async () => {
      await Promise.all(opened.map((store) => store.close()));
      await rm(dir, { recursive: true, force: true });
    },
  };
});

describe("SQLite store", () => {
  let dir: string;
  let path: string;
  const open: { close(): unknown }[] = [];
  const track = <T extends { close(): unknown }>(handle: T): T => (open.push(handle), handle);

  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), "stet-sqlite-"));
    path = join(dir, "nested", "dir", "stet.db");
  });
  afterEach(async () => {
    for (const handle of open.splice(0)) await handle.close();
    await rm(dir, { recursive: true, force: true });
  });

  it("creates the parent directory, uses WAL and reports its location", async () => {
    const store = track(openSqliteStore(path));
    await newRun(store);
    expect(store).toMatchObject({ location: path, fallbackDir: join(dir, "nested", "dir") });
    expect(existsSync(`${path}-wal`)).toBe(true);
    const raw = track(new Database(path));
    expect(raw.pragma("journal_mode", { simple: true })).toBe("wal");
  });

  it("keeps its data across reopening the file", async () => {
    const first = openSqliteStore(path);
    const { run, owner: me } = await newRun(first, { id: "kept" });
    await first.attempts.record(run.id, me.token, [draft({ sampleId: "s1", epoch: 1 })]);
    const before = await first.reads.listAttempts(run.id);
    await first.close();
    const again = track(openSqliteStore(path));
    expect(await again.runs.get("kept")).toMatchObject({ id: "kept", owner: { token: me.token } });
    expect(await again.reads.listAttempts("kept")).toEqual(before);
  });

  it("numbers its migrations 1, 2, 3… with no gaps or repeats", () => {
    expect(SQLITE_MIGRATIONS.map((m) => m.version)).toEqual(SQLITE_MIGRATIONS.map((_, i) => i + 1));
  });

  it("applies migrations once; running them again is harmless", async () => {
    track(openSqliteStore(path));
    const raw = track(new Database(path));
    const again = migrateSqlite(raw);
    expect(again.map((m) => m.status)).toEqual(SQLITE_MIGRATIONS.map(() => "already-applied"));
    expect(migrateSqlite(raw).every((m) => m.status === "already-applied")).toBe(true);
    const versions = raw.prepare("SELECT version FROM schema_migrations ORDER BY version").all();
    expect(versions).toEqual(SQLITE_MIGRATIONS.map((m) => ({ version: m.version })));
  });

  it("re-checks under the write lock: a migration another process applied first is skipped", () => {
    const mine = track(new Database(join(dir, "raced.db")));
    const theirs = track(new Database(mine.name));
    let raced = false;
    // Between our "is it applied?" read and our BEGIN IMMEDIATE, the other process migrates.
    const racing: SqliteDatabase = {
      prepare: (sql) => mine.prepare(sql),
      pragma: (source) => mine.pragma(source),
      close: () => mine.close(),
      get inTransaction() {
        return mine.inTransaction;
      },
      exec(sql) {
        if (sql === "BEGIN IMMEDIATE" && !raced) {
          raced = true;
          migrateSqlite(theirs);
        }
        return mine.exec(sql);
      },
    };
    expect(migrateSqlite(racing).map((m) => m.status)).toEqual(
      SQLITE_MIGRATIONS.map(() => "already-applied"),
    );
    expect(raced).toBe(true);
  });

  it("refuses a store migrated by a newer stet", async () => {
    track(openSqliteStore(path)).close();
    const raw = new Database(path);
    raw.prepare("INSERT INTO schema_migrations VALUES (999, 'future', 'now')").run();
    raw.close();
    expect(() => openSqliteStore(path)).toThrow(expect.objectContaining({ code: "E_STORE" }));
  });

  it.each([
    ["UPDATE attempts SET output = '\"changed\"'", /immutable/],
    ["DELETE FROM attempts", /never deleted/],
    ["UPDATE scorings SET scores = '[]'", /immutable/],
    ["DELETE FROM scorings", /never deleted/],
  ])("aborts %s", async (sql, message) => {
    const store = track(openSqliteStore(path));
    const { run, owner: me } = await newRun(store);
    await store.attempts.record(run.id, me.token, [draft({ sampleId: "s1", epoch: 1 })]);
    await store.attempts.recordScorings(run.id, me.token, [
      scoringOf({ sampleId: "s1", epoch: 1 }),
    ]);
    const before = await store.reads.listAttempts(run.id);
    const raw = track(new Database(path));
    expect(() => raw.prepare(sql).run()).toThrow(message);
    expect(await store.reads.listAttempts(run.id)).toEqual(before);
  });

  it("never changes a stored attempt's bytes through a takeover and later writes", async () => {
    const store = track(openSqliteStore(path));
    const { run, owner: first } = await newRun(store);
    await store.attempts.record(run.id, first.token, [draft({ sampleId: "s1", epoch: 1 })]);
    const raw = track(new Database(path));
    const bytes = () => raw.prepare("SELECT * FROM attempts ORDER BY rowid LIMIT 1").raw().get();
    const before = bytes();
    const next = owner("next");
    await store.runs.claim(run.id, next, first.token);
    await store.runs.updateSamples(run.id, next.token, sampleRecords(["s1"], 2));
    await store.attempts.record(run.id, next.token, [
      draft({ sampleId: "s1", epoch: 1 }, { fingerprint: fingerprintOf("s1", 2) }),
      draft({ sampleId: "s2", epoch: 1 }),
    ]);
    await store.runs.release(run.id, next.token, "completed");
    expect(bytes()).toEqual(before);
  });

  it("commits other writes made while a paged creation awaits a page, and keeps them when it fails", async () => {
    const db = openSqliteDatabase(path, { busyTimeoutMs: 1_000 });
    const store = track(createSqliteStore(db, { location: path, fallbackDir: dir }));
    let staged!: () => void;
    let resume!: () => void;
    const firstStaged = new Promise<void>((resolve) => (staged = resolve));
    const paused = new Promise<void>((resolve) => (resume = resolve));
    async function* pages() {
      yield sampleRecords(["p1", "p2"]);
      // The first page is staged: the creation now awaits its next one.
      staged();
      await paused;
      throw new Error("the dataset went away");
    }
    const paged = store.runs.create({
      id: "paged",
      config: runConfig(),
      samples: pages(),
      owner: owner(),
    });
    await firstStaged;
    expect(db.inTransaction).toBe(false);
    const { owner: me } = await newRun(store, { id: "other" });
    await store.attempts.record("other", me.token, [draft({ sampleId: "s1", epoch: 1 })]);
    resume();
    await expect(paged).rejects.toThrow("the dataset went away");
    // Read through another connection: what this one committed, and nothing of the paged run.
    const reader = track(openSqliteStore(path));
    expect(await reader.runs.get("paged")).toBeUndefined();
    expect(await reader.reads.getSamples("other")).toHaveLength(3);
    expect(await reader.reads.listAttempts("other")).toHaveLength(1);
    // The stage went with the failure, and was in a file (temp_store FILE), not in memory.
    expect(db.prepare("SELECT name FROM sqlite_temp_master").all()).toEqual([]);
    expect(db.pragma("temp_store", { simple: true })).toBe(1);
  });

  it("works in memory", async () => {
    const store = track(openSqliteStore(":memory:"));
    const { run, owner: me } = await newRun(store);
    await store.attempts.record(run.id, me.token, [draft({ sampleId: "s1", epoch: 1 })]);
    expect(await store.reads.countKeys(run.id)).toMatchObject({ scored: 1 });
  });

  it("computes heartbeat ages with its clock", async () => {
    let now = Date.parse("2025-06-01T12:00:00.000Z");
    const store = track(openSqliteStore(path, { now: () => now }));
    const { run } = await newRun(store);
    expect(run.owner).toMatchObject({ heartbeatAt: "2025-06-01T12:00:00.000Z", heartbeatAgeMs: 0 });
    now += 31_000;
    expect((await store.runs.get(run.id))?.owner?.heartbeatAgeMs).toBe(31_000);
  });

  it("ages a heartbeat stamped ahead of its clock (a clock moved back) below zero", async () => {
    let now = Date.parse("2025-06-01T12:00:00.000Z");
    const store = track(openSqliteStore(path, { now: () => now }));
    const { run } = await newRun(store);
    now -= 3_600_000;
    expect((await store.runs.get(run.id))?.owner?.heartbeatAgeMs).toBe(-3_600_000);
  });

  it("names the stopped process that holds its write lock when a write gives up waiting", async () => {
    const store = track(openSqliteStore(path, { busyTimeoutMs: 200 }));
    const { run, owner: me } = await newRun(store);
    // Another process takes the write lock and freezes (SIGSTOP) inside its transaction.
    const holder = spawn(
      process.execPath,
      [
        "-e",
        `const db = new (require("better-sqlite3"))(${JSON.stringify(path)});
         db.exec("BEGIN IMMEDIATE");
         process.kill(process.pid, "SIGSTOP");`,
      ],
      { stdio: "ignore" },
    );
    onTestFinished(() => {
      holder.kill("SIGKILL");
      holder.kill("SIGCONT");
    });
    await until(() => processState(holder.pid!) === "T", "the lock holder to stop");
    expect(writeLockHolder(path)).toBe(holder.pid);

    const write = store.attempts.record(run.id, me.token, [draft({ sampleId: "s1", epoch: 1 })]);
    await expect(write).rejects.toMatchObject({
      code: "E_STORE",
      message:
        `store ${path}: the database is locked: pid ${holder.pid} holds its write lock and is ` +
        `stopped (state T: SIGSTOP, Ctrl-Z or a debugger); nothing can write to this store until ` +
        `it continues (kill -CONT ${holder.pid}) or ends; gave up after 0.2s (busy timeout)`,
    });
    // Reads go on: WAL readers do not wait for the writer.
    expect(await store.reads.countKeys(run.id)).toMatchObject({ scored: 0 });
  });

  it("names a corrupt JSON column instead of returning a cast value", async () => {
    const store = track(openSqliteStore(path));
    const { run } = await newRun(store, { id: "bad" });
    const raw = track(new Database(path));
    raw.prepare(`UPDATE runs SET config = '{"epochs":"two"}' WHERE id = ?`).run(run.id);
    await expect(store.runs.get("bad")).rejects.toMatchObject({
      code: "E_STORE",
      message: expect.stringContaining("config of run bad"),
    });
  });

  it("names an attempt whose output or transcript column is not JSON", async () => {
    const store = track(openSqliteStore(path));
    const { run, owner: me } = await newRun(store, { id: "bad" });
    await store.attempts.record(run.id, me.token, [
      draft({ sampleId: "s1", epoch: 1 }),
      draft({ sampleId: "s2", epoch: 1 }, { transcript: [{ role: "user", content: "hi" }] }),
    ]);
    const raw = track(new Database(path));
    // Bytes damaged on disk, which no statement of stet's could write.
    raw.exec("DROP TRIGGER attempts_no_update");
    raw.prepare(`UPDATE attempts SET output = '{"cut' WHERE sample_id = 's1'`).run();
    await expect(store.reads.listAttempts(run.id, { sampleId: "s1" })).rejects.toMatchObject({
      code: "E_STORE",
      message: "corrupt output of attempt 1 of bad/s1#1: not JSON",
    });
    raw.prepare(`UPDATE attempts SET transcript = '[' WHERE sample_id = 's2'`).run();
    await expect(store.reads.listAttempts(run.id, { sampleId: "s2" })).rejects.toMatchObject({
      code: "E_STORE",
      message: "corrupt transcript of attempt 1 of bad/s2#1: not JSON",
    });
  });

  it("commits a rate bucket's take without an fsync, and every other write with one", async () => {
    // Under a loaded disk a take's fsync took up to 112 ms against a declared limit's 150 ms
    // lease in the tests' 6 s windows, so its chunks came lapsed. The `synchronous` setting each
    // COMMIT runs under (2 FULL, 1 NORMAL), read through the driver the store is given.
    const db = openSqliteDatabase(path, { busyTimeoutMs: 1000 });
    const commits: number[] = [];
    const seen: SqliteDatabase = Object.assign(Object.create(db) as SqliteDatabase, {
      exec(sql: string) {
        if (sql === "COMMIT") commits.push(Number(db.pragma("synchronous", { simple: true })));
        return db.exec(sql);
      },
    });
    const store = track(createSqliteStore(seen, { location: path, fallbackDir: dir }));
    const want = { requests: 1, tokens: 0, minTokens: 0 };
    await store.rates.take("openai:m@http://x/v1", bucketSpec({ rpm: 600 }), want);
    expect(commits).toEqual([1]);
    await newRun(store);
    expect(commits.length).toBeGreaterThan(1);
    expect(new Set(commits.slice(1))).toEqual(new Set([2]));
  });

  it("wraps driver failures as E_STORE", async () => {
    const store = openSqliteStore(path);
    await store.close();
    await expect(store.runs.get("any")).rejects.toMatchObject({ code: "E_STORE" });
  });

  describe("across processes", () => {
    const child = (code: string) =>
      promisify(execFile)(process.execPath, ["--import", "tsx", "--input-type=module", "-e", code]);
    const storeModule = new URL("./sqlite/index.ts", import.meta.url).href;

    it("migrates a fresh file once when several processes open it at the same time", async () => {
      const startAt = Date.now() + 1_500;
      const code = `import { openSqliteStore } from ${JSON.stringify(storeModule)};
        while (Date.now() < ${startAt}) await new Promise((r) => setTimeout(r, 1));
        await openSqliteStore(${JSON.stringify(path)}).close();`;
      await Promise.all(Array.from({ length: 4 }, () => child(code)));
      const raw = track(new Database(path));
      expect(raw.prepare("SELECT COUNT(*) AS n FROM schema_migrations").get()).toEqual({
        n: SQLITE_MIGRATIONS.length,
      });
    });

    it("lets exactly one of several processes claim an ownerless run", async () => {
      const store = track(openSqliteStore(path));
      const { owner: first } = await newRun(store, { id: "contested" });
      await store.runs.release("contested", first.token, "interrupted");
      const startAt = Date.now() + 1_500;
      const claims = await Promise.all(
        Array.from({ length: 4 }, (_, i) => {
          const me = JSON.stringify(owner(`p${i}`));
          return child(`import { openSqliteStore } from ${JSON.stringify(storeModule)};
            const store = openSqliteStore(${JSON.stringify(path)});
            while (Date.now() < ${startAt}) await new Promise((r) => setTimeout(r, 1));
            process.stdout.write(String(await store.runs.claim("contested", ${me}, null)));
            await store.close();`);
        }),
      );
      expect(claims.map((c) => c.stdout).filter((out) => out === "true")).toHaveLength(1);
      expect(claims.map((c) => c.stdout).filter((out) => out === "false")).toHaveLength(3);
    });
  });
});
