import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { storesPerTest, tempDir } from "../../test/helpers/temp-store.js";
import { keyString } from "../core/keys.js";
import type { AttemptDraft } from "../core/types.js";
import { draft, newRun } from "../store/contract/fixtures.js";
import type { Store } from "../store/types.js";
import { AttemptWriter } from "./attempt-writer.js";

const store = storesPerTest();
const cleanups: (() => void)[] = [];
afterEach(() => {
  for (const cleanup of cleanups.splice(0)) cleanup();
});
const fallbackDir = () => {
  const d = tempDir();
  cleanups.push(d.cleanup);
  return d.dir;
};

/**
 * A real SQLite store whose attempt commits are counted, and fail while `failing` is set (the
 * one fake: a disk that stops taking writes on demand).
 */
function flaky(real: Store) {
  const state = { failing: false, commits: 0, sizes: [] as number[] };
  const wrapped: Store = {
    ...real,
    attempts: {
      ...real.attempts,
      record: async (...args) => {
        state.commits++;
        if (state.failing) throw new Error("SQLITE_IOERR: disk I/O error");
        state.sizes.push(args[2].length);
        return real.attempts.record(...args);
      },
    },
  };
  return { store: wrapped, state };
}

const keys = (n: number) =>
  Array.from({ length: n }, (_, i) => ({ sampleId: `s${i + 1}`, epoch: 1 + (i % 2) }));

describe("AttemptWriter", () => {
  it("group commit: drafts queued together become one store commit, each write resolved with its row", async () => {
    const real = store();
    const { run, owner } = await newRun(real, { ids: ["s1", "s2", "s3"] });
    const { store: s, state } = flaky(real);
    const writer = new AttemptWriter({
      store: s,
      runId: run.id,
      token: owner.token,
      fallbackDirs: [fallbackDir()],
    });
    const drafts = keys(5).map((k) =>
      draft({ sampleId: `s${(Number(k.sampleId.slice(1)) % 3) + 1}`, epoch: k.epoch }),
    );
    const stored = await Promise.all(drafts.map((d) => writer.write(d)));
    expect(state.commits).toBe(1);
    expect(state.sizes).toEqual([5]);
    expect(stored.map((a) => keyString(a))).toEqual(drafts.map((d) => keyString(d)));
    expect(await real.reads.listAttempts(run.id)).toHaveLength(5);
    // A write after the commit is a commit of its own.
    await writer.write(draft({ sampleId: "s1", epoch: 2 }));
    expect(state.commits).toBe(2);
    expect(writer.outcome.committed.attempts).toBe(6);
    expect(writer.failure).toBeNull();
  });

  it("an in-flight mark rides along with the next commit, never a commit of its own", async () => {
    const real = store();
    const { run, owner } = await newRun(real, { ids: ["s1", "s2"] });
    const { store: s, state } = flaky(real);
    const writer = new AttemptWriter({
      store: s,
      runId: run.id,
      token: owner.token,
      fallbackDirs: [fallbackDir()],
    });
    writer.markInflight({ sampleId: "s2", epoch: 1 });
    await writer.drain();
    expect(state.commits).toBe(0);
    await writer.write(draft({ sampleId: "s1", epoch: 1 }));
    expect(state.commits).toBe(1);
    expect(await real.runs.listInflight(run.id)).toEqual([{ sampleId: "s2", epoch: 1 }]);
  });

  it("fallback: once the store stays unwritable, the drafts go to the fallback file, none lost or doubled", async () => {
    const real = store();
    const ids = keys(6).map((k) => k.sampleId);
    const { run, owner } = await newRun(real, { ids });
    const { store: s, state } = flaky(real);
    const dir = fallbackDir();
    const retried: number[] = [];
    const writer = new AttemptWriter({
      store: s,
      runId: run.id,
      token: owner.token,
      fallbackDirs: [dir],
      retryDelaysMs: [0, 0],
      onRetry: (_, failures) => retried.push(failures),
    });
    const drafts: AttemptDraft[] = ids.map((sampleId) => draft({ sampleId, epoch: 1 }));
    await Promise.all(drafts.slice(0, 2).map((d) => writer.write(d)));
    state.failing = true;
    const failed = await Promise.allSettled(drafts.slice(2, 5).map((d) => writer.write(d)));
    expect(failed.map((r) => r.status)).toEqual(["rejected", "rejected", "rejected"]);
    expect(failed[0]).toMatchObject({ reason: { code: "E_STORE_UNWRITABLE" } });
    // The commit was tried once and retried twice, then the writer turned failed.
    expect(retried).toEqual([1, 2]);
    // A write after the failure goes straight to the file, without asking the store again.
    const commits = state.commits;
    await expect(writer.write(drafts[5]!)).rejects.toMatchObject({ code: "E_STORE_UNWRITABLE" });
    expect(state.commits).toBe(commits);

    const file = join(dir, `${run.id}.fallback.jsonl`);
    const kept = readFileSync(file, "utf8")
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line) as AttemptDraft & { runId: string });
    const stored = await real.reads.listAttempts(run.id);
    expect(stored.map((a) => a.sampleId)).toEqual(ids.slice(0, 2));
    expect(kept.map((a) => a.sampleId)).toEqual(ids.slice(2));
    expect(kept[0]).toMatchObject({ runId: run.id, ...drafts[2] });
    expect(writer.outcome).toMatchObject({
      path: file,
      committed: { attempts: 2 },
      kept: { attempts: 4 },
      lost: { attempts: 0, keys: [] },
    });
    expect(writer.failure).toMatchObject({
      code: "E_STORE_UNWRITABLE",
      details: { fallbackPath: file },
    });
  });

  it("a fence is a verdict: not retried, not diverted, and the writer fails with E_FENCED", async () => {
    const real = store();
    const { run } = await newRun(real, { ids: ["s1"] });
    const { store: s, state } = flaky(real);
    const dir = fallbackDir();
    const writer = new AttemptWriter({
      store: s,
      runId: run.id,
      token: "not-the-owner",
      fallbackDirs: [dir],
      retryDelaysMs: [0, 0],
    });
    await expect(writer.write(draft({ sampleId: "s1", epoch: 1 }))).rejects.toMatchObject({
      code: "E_FENCED",
    });
    expect(state.commits).toBe(1);
    expect(writer.failure).toMatchObject({ code: "E_FENCED" });
    expect(writer.outcome.kept.attempts).toBe(0);
  });
});
