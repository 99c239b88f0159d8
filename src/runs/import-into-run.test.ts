import { createHash } from "node:crypto";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import type { Scorer, SolverFn } from "../core/eval.js";
import { fingerprintSample } from "../core/fingerprint.js";
import type { SampleRecord } from "../core/types.js";
import { newOwnerIdentity } from "../engine/owner.js";
import { resumeRun } from "../runs/resume-run.js";
import { runEval } from "../runs/start-run.js";
import type { EngineEval } from "../core/eval.js";
import { resolveEval } from "../eval/resolve-eval.js";
import { openSqliteStore } from "../store/sqlite/index.js";
import type { Store } from "../store/types.js";
import { dumpDb } from "../../test/helpers/db-dump.js";
import { tempDir } from "../../test/helpers/temp-store.js";
import { buildResultSet, loadOutcomes } from "../evalport/build-result-set.js";
import { importResults } from "./import-into-run.js";
import { loadSuite } from "../evalport/load-suite.js";
import { readSeed } from "../evalport/read-seed.js";
import { toResult } from "../evalport/result-mapping.js";

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

function openStore(): { store: Store; path: string; dir: string } {
  const { dir, cleanup } = tempDir();
  const path = join(dir, "stet.db");
  const store = openSqliteStore(path);
  cleanups.push(cleanup, () => store.close());
  return { store, path, dir };
}

const records: SampleRecord[] = Array.from({ length: 10 }, (_, i) => {
  const sample = { id: `q${i}`, input: `${i} + ${i}`, target: String(2 * i) };
  return { sample, fingerprint: fingerprintSample(sample) };
});

/** Doubles the number; throws for samples listed in `failing`. Costs $0.01 per call. */
function evalWith(failing: ReadonlySet<string> = new Set(), calls: string[] = []): EngineEval {
  const solver: SolverFn = (sample) => {
    calls.push(sample.id);
    if (failing.has(sample.id)) throw new Error("provider down");
    const n = Number(String(sample.input).split(" + ")[0]);
    return { output: String(2 * n), usage: { inputTokens: 10, outputTokens: 2, costUsd: 0.01 } };
  };
  const exact: Scorer = { name: "exact", score: ({ sample, output }) => output === sample.target };
  return {
    name: "double",
    samples: records,
    solver,
    scorers: [exact],
    epochs: 1,
    reducer: "mean",
    concurrency: 2,
    retries: 0,
  };
}

const lastSix = new Set(["q6", "q7", "q8", "q9"]);

/** A complete run exported as a ResultSet file, and a run with q6–q9 errored to import into. */
async function setup() {
  const source = openStore();
  const complete = await runEval({ store: source.store, eval: evalWith() });
  const file = join(source.dir, "backup.json");
  writeFileSync(file, JSON.stringify(await buildResultSet(source.store, complete.runId), null, 2));
  const target = openStore();
  const partial = await runEval({ store: target.store, eval: evalWith(lastSix) });
  expect(partial.status).toBe("errored");
  const sha256 = createHash("sha256").update(readFileSync(file)).digest("hex");
  return { ...target, runId: partial.runId, file, sha256, source };
}

describe("importResults", () => {
  it("inserts only the keys the run lacks, as imported attempts, and reports the rest", async () => {
    const { store, runId, file, sha256 } = await setup();
    const before = await store.reads.listAttempts(runId);
    const report = await importResults({ store, runId, file, sha256: `sha256:${sha256}` });
    expect(report).toMatchObject({
      format: "resultset",
      source: `sha256:${sha256}`,
      previousStatus: "errored",
      status: "completed",
      counts: { total: 10, scored: 10, remaining: 0 },
    });
    expect(report.imported.map((k) => k.sampleId)).toEqual(["q6", "q7", "q8", "q9"]);
    expect(report.alreadyScored.map((k) => k.sampleId)).toEqual([
      "q0",
      "q1",
      "q2",
      "q3",
      "q4",
      "q5",
    ]);
    const after = await store.reads.listAttempts(runId);
    // Completed work stands: every attempt that was there is unchanged, and none was removed.
    expect(
      after.filter((a) => before.some((b) => b.sampleId === a.sampleId && b.attempt === a.attempt)),
    ).toEqual(before);
    const imported = after.filter((a) => a.provenance.kind === "imported");
    expect(imported.map((a) => [a.sampleId, a.attempt, a.status, a.output])).toEqual([
      ["q6", 2, "scored", "12"],
      ["q7", 2, "scored", "14"],
      ["q8", 2, "scored", "16"],
      ["q9", 2, "scored", "18"],
    ]);
    expect(imported[0]).toMatchObject({
      provenance: { kind: "imported", source: `sha256:${sha256}` },
      usage: { inputTokens: 10, outputTokens: 2, costUsd: 0.01 },
      fingerprint: records[6]!.fingerprint,
    });
    expect((await store.runs.get(runId))?.owner).toBeNull();
  });

  it("counts imported cost as reused, never as spend", async () => {
    const { store, runId, file } = await setup();
    await importResults({ store, runId, file });
    const report = await resumeRun({ store, runId, eval: evalWith() });
    expect(report.usage.spentNow.attempts).toBe(0);
    // Executed: six scored attempts and four errors (no usage); the imported four are not spend.
    expect(report.usage.totalSpent).toMatchObject({ attempts: 10, inputTokens: 60 });
    expect(report.usage.totalSpent.costUsd).toBeCloseTo(0.06);
    // A resume with nothing left to do reused only what was imported (paid elsewhere).
    expect(report.usage.reused).toMatchObject({ attempts: 4, inputTokens: 40 });
    expect(report.usage.reused.costUsd).toBeCloseTo(0.04);
    expect(report.metrics).toEqual([expect.objectContaining({ scorer: "exact", mean: 1 })]);
  });

  it("changes nothing when the same file is imported twice", async () => {
    const { store, path, runId, file } = await setup();
    await importResults({ store, runId, file });
    const before = dumpDb(path);
    const again = await importResults({ store, runId, file });
    expect(again.imported).toEqual([]);
    expect(again.alreadyScored).toHaveLength(10);
    expect(dumpDb(path)).toBe(before);
  });

  it("refuses a wrong sha256 and changes nothing", async () => {
    const { store, path, runId, file } = await setup();
    const before = dumpDb(path);
    await expect(importResults({ store, runId, file, sha256: "0".repeat(64) })).rejects.toThrow(
      /sha256 mismatch for .*backup\.json: expected 0{64}, the file's bytes hash to [0-9a-f]{64}/,
    );
    expect(dumpDb(path)).toBe(before);
  });

  it.each([
    [
      "an unknown test_case_id",
      (doc: Doc) => (doc.results[7]!.test_case_id = "zzz"),
      /not samples of the run: "zzz"/,
    ],
    [
      "a fingerprint that differs from the run's",
      (doc: Doc) => ((doc.results[8]!.metadata!.stet as { fingerprint: string }).fingerprint = "f"),
      /fingerprint mismatch\): "q8"/,
    ],
    [
      "an epoch beyond the run's",
      (doc: Doc) => (doc.results[9]!.attempt = 2),
      /beyond the run's 1 epoch\(s\): "q9 \(epoch 2\)"/,
    ],
  ])("refuses %s, naming it, and changes nothing", async (_, change, message) => {
    const { store, path, runId, file } = await setup();
    const doc = JSON.parse(readFileSync(file, "utf8")) as Doc;
    change(doc);
    writeFileSync(file, JSON.stringify(doc));
    const before = dumpDb(path);
    const importing = importResults({ store, runId, file });
    await expect(importing).rejects.toMatchObject({ code: "E_INVALID_INPUT" });
    await expect(importing).rejects.toThrow(message);
    expect(dumpDb(path)).toBe(before);
  });

  it("refuses while a live process owns the run (E_RUN_ACTIVE)", async () => {
    const { store, path, file } = await setup();
    await store.runs.create({
      id: "r_live",
      config: {
        evalName: "double",
        epochs: 1,
        concurrency: 1,
        retries: 0,
        reducer: "mean",
        solver: {},
        scorers: ["exact"],
      },
      samples: records,
      owner: newOwnerIdentity(),
    });
    const before = dumpDb(path);
    await expect(importResults({ store, runId: "r_live", file })).rejects.toMatchObject({
      code: "E_RUN_ACTIVE",
    });
    expect(dumpDb(path)).toBe(before);
  });

  it("imports a Results JSONL (one Result per line)", async () => {
    const { store, runId, source } = await setup();
    const complete = (await source.store.reads.listRuns())[0]!.run;
    const { outcomes } = await loadOutcomes(source.store, complete.id);
    const file = join(source.dir, "results.jsonl");
    writeFileSync(file, outcomes.map((a) => JSON.stringify(toResult(a, { epochs: 1 }))).join("\n"));
    const report = await importResults({ store, runId, file });
    expect(report).toMatchObject({ format: "results-jsonl", status: "completed" });
    expect(report.imported).toHaveLength(4);
  });

  it("imports the fallback JSONL the engine wrote when the store became unwritable", async () => {
    const { store, path } = openStore();
    let commits = 0;
    // The same store, except that attempt commits fail from the third on.
    const failing: Store = {
      ...store,
      attempts: {
        ...store.attempts,
        record: (...args) =>
          ++commits > 2 ? Promise.reject(new Error("disk full")) : store.attempts.record(...args),
      },
    };
    const ev = { ...evalWith(), concurrency: 1 };
    await expect(
      runEval({ store: failing, eval: ev, storeRetryDelaysMs: [] }),
    ).rejects.toMatchObject({ code: "E_STORE_UNWRITABLE" });
    const run = (await store.reads.listRuns())[0]!.run;
    expect(run.status).toBe("interrupted");
    const fallback = join(store.fallbackDir, `${run.id}.fallback.jsonl`);
    const lines = readFileSync(fallback, "utf8").trim().split("\n");
    expect(lines.length).toBeGreaterThan(0);

    const stored = (await store.reads.listAttempts(run.id)).length;
    const before = dumpDb(path);
    const report = await importResults({ store, runId: run.id, file: fallback });
    expect(report).toMatchObject({ format: "fallback-jsonl", status: "interrupted" });
    expect(report.imported).toHaveLength(lines.length);
    expect(await store.reads.listAttempts(run.id)).toHaveLength(stored + lines.length);
    expect(dumpDb(path)).not.toBe(before);
    // The run's own attempts, paid for once: they keep their provenance and count as its spend.
    const attempts = await store.reads.listAttempts(run.id);
    expect(attempts.every((a) => a.provenance.kind === "executed")).toBe(true);
    // With their retries (the function solver re-sent nothing): the lines carry them.
    expect(attempts.map((a) => a.retries)).toEqual(attempts.map(() => 0));

    // A fallback file belongs to its run.
    const other = await runEval({ store, eval: evalWith() });
    await expect(importResults({ store, runId: other.runId, file: fallback })).rejects.toThrow(
      new RegExp(`holds attempts of run ${run.id}, not of ${other.runId}`),
    );
  });
});

describe("importResults of a re-run's fallback JSONL", () => {
  it("restores the re-run attempts the store could not take, once", async () => {
    const { store } = openStore();
    const done = await runEval({ store, eval: evalWith() });
    expect(done.status).toBe("completed");
    const failing: Store = {
      ...store,
      attempts: { ...store.attempts, record: () => Promise.reject(new Error("disk full")) },
    };
    await expect(
      resumeRun({
        store: failing,
        runId: done.runId,
        eval: evalWith(),
        rerun: ["q1", "q2"],
        storeRetryDelaysMs: [],
      }),
    ).rejects.toMatchObject({ code: "E_STORE_UNWRITABLE" });
    const fallback = join(store.fallbackDir, `${done.runId}.fallback.jsonl`);
    const lines = readFileSync(fallback, "utf8").trim().split("\n");
    expect(lines.map((l) => (JSON.parse(l) as { rerunAfter?: number }).rerunAfter)).toEqual([1, 1]);

    const report = await importResults({ store, runId: done.runId, file: fallback });
    expect(report.imported).toHaveLength(2);
    expect(
      (await store.reads.listAttempts(done.runId, { sampleId: "q1" })).map((a) => a.attempt),
    ).toEqual([1, 2]);
    // The re-run is done: a plain resume executes nothing, and the file imports no more.
    const calls: string[] = [];
    await resumeRun({ store, runId: done.runId, eval: evalWith(new Set(), calls) });
    expect(calls).toEqual([]);
    const again = await importResults({ store, runId: done.runId, file: fallback });
    expect(again.imported).toHaveLength(0);
    expect(again.alreadyScored).toHaveLength(2);
  });
});

describe("importResults of another tool's ResultSet", () => {
  it("imports the spec's examples/results.json into a run of examples/basic-suite.json", async () => {
    const spec = (name: string) =>
      fileURLToPath(new URL(`../../test/fixtures/evalport/examples/${name}`, import.meta.url));
    const loaded = await loadSuite(spec("basic-suite.json"));
    const resolved = await resolveEval(loaded.eval, { baseDir: loaded.baseDir });
    const { store } = openStore();
    const owner = newOwnerIdentity();
    const config = {
      evalName: resolved.name,
      epochs: 1,
      concurrency: 1,
      retries: 0,
      reducer: "mean" as const,
      solver: {},
      scorers: resolved.scorers.map((sc) => sc.name),
    };
    await store.runs.create({ id: "r_basic", config, samples: [...resolved.samples], owner });
    await store.runs.release("r_basic", owner.token, "interrupted");

    const report = await importResults({ store, runId: "r_basic", file: spec("results.json") });
    expect(report).toMatchObject({ status: "completed", alreadyScored: [] });
    const attempts = await store.reads.listAttempts("r_basic");
    expect(attempts.map((a) => [a.sampleId, a.output, a.scores[0]?.value])).toEqual([
      ["tc_1", "4", 1],
      ["tc_2", "100 degrees C", 0],
    ]);
    expect(attempts[1]).toMatchObject({
      provenance: { kind: "imported" },
      completedAt: "2026-01-15T10:00:05Z",
      fingerprint: resolved.samples[1]!.fingerprint,
    });
  });
});

describe("runEval with a seed (stet run --resume-from)", () => {
  it("executes only the keys the partial ResultSet does not complete", async () => {
    const source = openStore();
    const partial = await runEval({ store: source.store, eval: evalWith(lastSix) });
    const file = join(source.dir, "partial.json");
    const doc = await buildResultSet(source.store, partial.runId);
    expect(doc.metadata).toMatchObject({ openeval: { partial: true } });
    writeFileSync(file, JSON.stringify(doc));

    const calls: string[] = [];
    const ev = evalWith(new Set(), calls);
    const seed = await readSeed(file, ev);
    expect(seed.drafts.map((d) => d.sampleId)).toEqual(["q0", "q1", "q2", "q3", "q4", "q5"]);
    expect(seed.notCompleted.map((k) => k.sampleId)).toEqual(["q6", "q7", "q8", "q9"]);
    const { store } = openStore();
    const report = await runEval({ store, eval: ev, seed: seed.drafts });
    expect(calls.sort()).toEqual(["q6", "q7", "q8", "q9"]);
    expect(report).toMatchObject({ status: "completed", preserved: 6, executed: 4 });
    expect(report.usage.spentNow.costUsd).toBeCloseTo(0.04);
    expect(report.usage.totalSpent.costUsd).toBeCloseTo(0.04);
    expect(report.usage.reused.attempts).toBe(6);
  });

  it("refuses a seed that does not fit the eval before any run exists", async () => {
    const source = openStore();
    const done = await runEval({ store: source.store, eval: evalWith() });
    const file = join(source.dir, "other.json");
    const doc = await buildResultSet(source.store, done.runId);
    doc.results[0]!.test_case_id = "not_in_this_eval";
    writeFileSync(file, JSON.stringify(doc));
    await expect(readSeed(file, evalWith())).rejects.toThrow(/"not_in_this_eval"/);
  });
});

type Doc = Awaited<ReturnType<typeof buildResultSet>>;
