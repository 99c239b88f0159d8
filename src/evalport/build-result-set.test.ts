import { describe, expect, it } from "vitest";
import { isStetError } from "../core/errors.js";
import type { Scorer, SolverFn } from "../core/eval.js";
import { fingerprintSample } from "../core/fingerprint.js";
import type { Sample, SampleRecord } from "../core/types.js";
import { resumeRun } from "../runs/resume-run.js";
import { runEval } from "../runs/start-run.js";
import type { EngineEval } from "../core/eval.js";
import type { Store } from "../store/types.js";
import { storesPerTest } from "../../test/helpers/temp-store.js";
import { assembleResultSet } from "./assemble-result-set.js";
import { buildResultSet, loadOutcomes } from "./build-result-set.js";
import { isPartial } from "./is-partial.js";
import { mergeResultSets } from "./merge-result-sets.js";
import { toResult } from "./result-mapping.js";
import { resultKey } from "./result-set-types.js";
import { validateDocument } from "./validate-document.js";

const store = storesPerTest();

const records = (n: number): SampleRecord[] =>
  Array.from({ length: n }, (_, i) => {
    const sample: Sample = {
      id: `q${String(i).padStart(2, "0")}`,
      input: i,
      target: String(2 * i),
    };
    return { sample, fingerprint: fingerprintSample(sample) };
  });

/** Doubles its input; wrong on every third sample's first epoch; throws on sample `failOn`. */
function evalOf(n: number, over: Partial<EngineEval> & { failOn?: string } = {}): EngineEval {
  const solver: SolverFn = async (sample, ctx) => {
    await new Promise((r) => setTimeout(r, 1));
    if (sample.id === over.failOn)
      throw Object.assign(new Error("upstream 503"), { type: "provider", status: 503 });
    const x = Number(sample.input);
    const output = x % 3 === 0 && ctx.epoch === 1 ? "wrong" : String(2 * x);
    return { output, usage: { inputTokens: 10, outputTokens: 2, costUsd: 0.001 } };
  };
  const exact: Scorer = { name: "exact", score: ({ sample, output }) => output === sample.target };
  return {
    name: "double",
    samples: records(n),
    solver,
    scorers: [exact],
    epochs: 1,
    reducer: "mean",
    concurrency: 3,
    retries: 0,
    ...over,
  };
}

/** Runs until `k` attempts are committed, then stops gracefully: an interrupted run. */
async function interruptedRun(s: Store, ev: EngineEval, k: number) {
  const stop = new AbortController();
  let committed = 0;
  return runEval({
    store: s,
    eval: ev,
    signal: stop.signal,
    graceMs: 5_000,
    onEvent: (e) => {
      if (e.type === "attempt-committed" && ++committed === k) stop.abort();
    },
  });
}

const valid = (doc: unknown) => expect(validateDocument(doc, "resultset").errors).toEqual([]);

describe("buildResultSet", () => {
  it("exports a complete run as a valid, complete ResultSet", async () => {
    const s = store();
    const report = await runEval({ store: s, eval: evalOf(6), model: "gpt-x" });
    const doc = await buildResultSet(s, report.runId);
    valid(doc);
    expect(isPartial(doc)).toBe(false);
    expect(doc).toMatchObject({
      suite_id: "double",
      run_id: report.runId,
      provider: { model: "gpt-x" },
      runner: { name: "stet" },
      summary: { total: 6, passed: 4, failed: 2, skipped: 0, pass_rate: 4 / 6 },
    });
    expect(doc.results.map((r) => r.test_case_id)).toEqual([
      "q00",
      "q01",
      "q02",
      "q03",
      "q04",
      "q05",
    ]);
    expect(doc.results.every((r) => r.attempt === undefined && r.completed_at!.endsWith("Z"))).toBe(
      true,
    );
    expect(doc.completed_at).toBe(
      doc.results
        .map((r) => r.completed_at!)
        .sort()
        .at(-1),
    );
    expect(doc.metadata).toEqual({
      stet: { test_case_ids: doc.results.map((r) => r.test_case_id), epochs: 1 },
    });
  });

  it("exports an interrupted run as a valid partial ResultSet naming what it covers", async () => {
    const s = store();
    const report = await interruptedRun(s, evalOf(30), 8);
    expect(report.status).toBe("interrupted");
    const doc = await buildResultSet(s, report.runId);
    valid(doc);
    expect(isPartial(doc)).toBe(true);
    expect(doc.metadata).toMatchObject({ openeval: { partial: true } });
    expect(doc.completed_at).toBeUndefined();
    const stet = doc.metadata!.stet as { covered: string[]; test_case_ids: string[] };
    expect(stet.covered).toEqual(doc.results.map((r) => r.test_case_id));
    expect(stet.test_case_ids).toHaveLength(30);
    expect(doc.results.length).toBeGreaterThanOrEqual(8);
    expect(doc.results.length).toBeLessThan(30);
  });

  it("exports a multi-epoch run with attempt = epoch, valid", async () => {
    const s = store();
    const report = await runEval({ store: s, eval: evalOf(4, { epochs: 3 }) });
    const doc = await buildResultSet(s, report.runId);
    valid(doc);
    expect(isPartial(doc)).toBe(false);
    expect(doc.results.map((r) => `${r.test_case_id}#${r.attempt}`).slice(0, 4)).toEqual([
      "q00#1",
      "q00#2",
      "q00#3",
      "q01#1",
    ]);
    expect(doc.summary).toMatchObject({ total: 12, passed: 10 });
  });

  it("exports error outcomes with their error, partial and valid", async () => {
    const s = store();
    const report = await runEval({ store: s, eval: evalOf(3, { failOn: "q01" }) });
    expect(report.status).toBe("errored");
    const doc = await buildResultSet(s, report.runId);
    valid(doc);
    expect(isPartial(doc)).toBe(true);
    expect(doc.results[1]).toMatchObject({
      test_case_id: "q01",
      passed: false,
      actual_output: "",
      error: { type: "provider_error", code: 503, retryable: true },
    });
    expect(doc.summary).toMatchObject({ total: 3, skipped: 1 });
  });

  it("refuses plainly for a run without any outcome", async () => {
    const s = store();
    const now = new AbortController();
    const hang: SolverFn = () => new Promise(() => {});
    const empty = await runEval({
      store: s,
      eval: { ...evalOf(3), solver: hang },
      abortSignal: now.signal,
      onEvent: (e) => e.type === "run-started" && now.abort(),
    });
    expect(empty.counts.scored + empty.counts.errored).toBe(0);
    const error = await buildResultSet(s, empty.runId).catch((e: unknown) => e);
    expect(isStetError(error, "E_INVALID_INPUT")).toBe(true);
    expect((error as Error).message).toMatch(/no finished sample yet.*nothing was written/);
  });

  it("split and merged: two partials of one run merge into the complete run's ResultSet", async () => {
    const s = store();
    const ev = evalOf(20, { epochs: 2 });
    const first = await interruptedRun(s, ev, 15);
    expect(first.status).toBe("interrupted");
    const firstHalf = await buildResultSet(s, first.runId);
    expect(isPartial(firstHalf)).toBe(true);

    const resumed = await resumeRun({ store: s, runId: first.runId, eval: ev });
    expect(resumed.status).toBe("completed");
    const complete = await buildResultSet(s, first.runId);

    // The second partial: only the attempts the resume committed.
    const { run, samples, outcomes } = await loadOutcomes(s, first.runId);
    const before = new Set(firstHalf.results.map(resultKey));
    const { results: _r, summary: _s, ...header } = firstHalf;
    const secondHalf = assembleResultSet(
      header,
      outcomes
        .map((a) => toResult(a, { epochs: run.config.epochs }))
        .filter((r) => !before.has(resultKey(r))),
      { testCaseIds: samples.map((x) => x.sample.id), epochs: run.config.epochs },
    );
    valid(secondHalf);
    expect(isPartial(secondHalf)).toBe(true);
    expect(secondHalf.results.length + firstHalf.results.length).toBe(40);

    const inputs = [
      { name: "second.json", doc: secondHalf },
      { name: "first.json", doc: firstHalf },
    ];
    const merged = mergeResultSets(inputs);
    valid(merged);
    const { completed_at: _a, started_at: _b, ...mergedBody } = merged;
    const { completed_at: _c, started_at: _d, ...completeBody } = complete;
    expect(mergedBody).toEqual(completeBody);
    expect(mergeResultSets([...inputs].reverse())).toEqual(merged);
    expect(mergeResultSets([...inputs, { name: "complete.json", doc: complete }])).toEqual(
      complete,
    );
  });
});
