import Database from "better-sqlite3";
import { execFile } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { newRun } from "./contract/fixtures.js";
import { openSqliteStore } from "./sqlite/index.js";
import type { StepDraft, Store } from "./types.js";

const entry = (step: number): StepDraft => ({
  sampleId: "s1",
  epoch: 1,
  step,
  name: "tool",
  kind: "step",
  inputHash: "a".repeat(64),
  input: { step },
  result: { ok: step },
  error: null,
  usage: null,
  recordedAt: "2025-01-02T00:00:00.000Z",
  durationMs: 1,
});

// A file store's journal commits in a thread of its own (CommitThread): the durable commit's
// wait (the fsync, or another connection's write lock) is that thread's, not the evaluation's.
describe("SQLite journal writes in the store's commit thread", () => {
  let dir: string;
  let path: string;
  const open: { close(): unknown }[] = [];
  const track = <T extends { close(): unknown }>(handle: T): T => (open.push(handle), handle);

  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), "stet-journal-thread-"));
    path = join(dir, "stet.db");
  });
  afterEach(async () => {
    for (const handle of open.splice(0).reverse()) await handle.close();
    await rm(dir, { recursive: true, force: true });
  });

  it("waits for the write lock without holding up this thread, and commits once it is free", async () => {
    const store: Store = track(openSqliteStore(path, { busyTimeoutMs: 5_000 }));
    const { run, owner: me } = await newRun(store);
    // This thread's own connection holds the write lock: a write that waited for it here would
    // wait out the busy timeout, since nothing here could release the lock meanwhile.
    const holder = track(new Database(path));
    holder.exec("BEGIN IMMEDIATE");
    const write = store.journal.record(run.id, me.token, [entry(0)]);
    await new Promise((resolve) => setImmediate(resolve));
    holder.exec("COMMIT");
    await write;
    const entries = await store.journal.list(run.id, { attempt: "open" });
    expect(entries.map((e) => e.result)).toEqual([{ ok: 0 }]);
  });

  it("fails a write that the lock kept out past the busy timeout with E_STORE", async () => {
    const store = track(openSqliteStore(path, { busyTimeoutMs: 100 }));
    const { run, owner: me } = await newRun(store);
    const holder = track(new Database(path));
    holder.exec("BEGIN IMMEDIATE");
    const write = store.journal.record(run.id, me.token, [entry(0)]);
    await expect(write).rejects.toMatchObject({ code: "E_STORE", message: /locked/ });
    holder.exec("ROLLBACK");
    // Retried (as the writer does), it commits.
    await store.journal.record(run.id, me.token, [entry(0)]);
    expect(await store.journal.list(run.id, { attempt: "open" })).toHaveLength(1);
  });

  it("commits what it was handed before the store's close resolves", async () => {
    const store = openSqliteStore(path);
    const { run, owner: me } = await newRun(store);
    const writes = [0, 1, 2].map((i) => store.journal.record(run.id, me.token, [entry(i)]));
    await store.close();
    await Promise.all(writes);
    const again = track(openSqliteStore(path));
    const entries = await again.journal.list(run.id, { attempt: "open" });
    expect(entries.map((e) => e.step)).toEqual([0, 1, 2]);
  });

  it("runs when the store's sources are loaded through tsx, whose transpiler adds helpers", async () => {
    // The same lock as above, from a process that imports src/ through tsx (as `npx tsx` would):
    // were the thread unable to start there, the write would wait out its busy timeout here.
    const script = `
      const { openSqliteStore } = await import(${JSON.stringify(join(import.meta.dirname, "sqlite/index.ts"))});
      const { newRun } = await import(${JSON.stringify(join(import.meta.dirname, "contract/fixtures.ts"))});
      const { default: Database } = await import("better-sqlite3");
      const store = openSqliteStore(${JSON.stringify(path)}, { busyTimeoutMs: 5000 });
      const { run, owner } = await newRun(store);
      const holder = new Database(${JSON.stringify(path)});
      holder.exec("BEGIN IMMEDIATE");
      const write = store.journal.record(run.id, owner.token, [${JSON.stringify(entry(0))}]);
      await new Promise((resolve) => setImmediate(resolve));
      holder.exec("COMMIT");
      await write;
      console.log((await store.journal.list(run.id, { attempt: "open" })).length);
      holder.close();
      await store.close();`;
    const { stdout } = await promisify(execFile)(
      process.execPath,
      ["--import", "tsx", "--input-type=module", "-e", script],
      { cwd: join(import.meta.dirname, "../..") },
    );
    expect(stdout.trim()).toBe("1");
  });

  it("refuses a token that does not own the run with E_FENCED, as the store's own fence does", async () => {
    const store = track(openSqliteStore(path));
    const { run } = await newRun(store);
    const write = store.journal.record(run.id, "not-the-owner", [entry(0)]);
    await expect(write).rejects.toMatchObject({ code: "E_FENCED" });
    expect(await store.journal.list(run.id, {})).toEqual([]);
  });
});
