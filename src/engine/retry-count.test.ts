import { afterEach, describe, expect, it } from "vitest";
import type { EngineEval, Scorer, SolverFn } from "../core/eval.js";
import { fingerprintSample } from "../core/fingerprint.js";
import type { Sample, SampleRecord } from "../core/types.js";
import { storedReport } from "./report.js";
import { rescoreRun } from "../runs/rescore-run.js";
import { resumeRun } from "../runs/resume-run.js";
import { runEval } from "../runs/start-run.js";
import { modelGraded } from "../scorers/model-graded.js";
import { chat } from "../solvers/chat.js";
import { callModel } from "../solvers/model-call.js";
import {
  startMockOpenAI,
  type MockAction,
  type MockOpenAI,
} from "../../test/helpers/mock-openai.js";
import { storesPerTest } from "../../test/helpers/temp-store.js";

/**
 * An attempt's `retries`: every request its model calls re-sent after a retryable failure, by
 * whichever path the call took (solvers.chat, ctx.chat, a judge), counted against a real local
 * OpenAI-format server that fails known requests.
 */

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

const store = storesPerTest();

/** A mock that fails the first `failures(key)` requests of each key (500, then 429, …). */
async function failing(failures: (key: string) => number): Promise<MockOpenAI> {
  const mock = await startMockOpenAI({
    respond: ({ key, n }): MockAction | undefined => {
      if (n <= failures(key)) return n % 2 === 1 ? { status: 500 } : { status: 429 };
      return { reply: key.includes("<rubric>") ? "Fine.\nGRADE: C" : `re: ${key}` };
    },
  });
  cleanups.push(() => mock.close());
  return mock;
}

const fast = { backoff: { initialMs: 1, maxMs: 2 } };

function records(ids: string[]): SampleRecord[] {
  return ids.map((id) => {
    const sample: Sample = { id, input: id, target: `re: ${id}` };
    return { sample, fingerprint: fingerprintSample(sample) };
  });
}

function engineEval(solver: SolverFn, overrides: Partial<EngineEval> = {}): EngineEval {
  return {
    name: "retries",
    samples: records(["a"]),
    solver,
    scorers: [{ name: "ok", score: () => 1 }],
    epochs: 1,
    reducer: "mean",
    concurrency: 1,
    retries: 0,
    callModel,
    ...overrides,
  };
}

const total = (counts: Record<string, number>) =>
  Object.values(counts).reduce((sum, n) => sum + n, 0);

describe("an attempt's retries", () => {
  it("solvers.chat: its re-sent requests, also of a call that failed in the end", async () => {
    const mock = await failing((key) => (key === "doomed" ? 9 : 2));
    const s = store();
    const solver = chat({ model: "m", baseURL: mock.url, maxRetries: 3, ...fast });
    const report = await runEval({
      store: s,
      eval: engineEval(solver, { samples: records(["a", "doomed"]) }),
    });
    const attempts = await s.reads.listAttempts(report.runId);
    expect(attempts.map((a) => [a.sampleId, a.status, a.retries])).toEqual([
      ["a", "scored", 2],
      ["doomed", "error", 3],
    ]);
    expect(mock.counts()).toEqual({ a: 3, doomed: 4 });
    expect(report.retries).toEqual({ total: 5, keysRetried: 0, unrecorded: 0 });
  });

  it("ctx.chat: summed over every call, plus what the solver reports itself", async () => {
    const mock = await failing((key) => (key === "first" ? 1 : key === "second" ? 2 : 0));
    const s = store();
    const solver: SolverFn = async (_, ctx) => {
      const endpoint = { model: "m", baseURL: mock.url, ...fast };
      await ctx.chat({ ...endpoint, messages: [{ role: "user", content: "first" }] });
      const b = await ctx.chat({ ...endpoint, messages: [{ role: "user", content: "second" }] });
      // Requests it re-sent on its own, outside ctx.chat.
      return { output: b.content, retries: 4 };
    };
    const report = await runEval({ store: s, eval: engineEval(solver) });
    const [attempt] = await s.reads.listAttempts(report.runId);
    expect(attempt).toMatchObject({ status: "scored", retries: 1 + 2 + 4 });
    expect(total(mock.counts()) - 2).toBe(3);
  });

  it("a judge's re-sent requests are the attempt's when it scores the attempt, the scoring's when a rescore runs it", async () => {
    const mock = await failing((key) => (key.includes("<rubric>") ? 1 : 0));
    const s = store();
    const judge: Scorer = modelGraded({ model: "judge", baseURL: mock.url, ...fast });
    const solver = chat({ model: "m", baseURL: mock.url, ...fast });
    const first = await runEval({ store: s, eval: engineEval(solver, { scorers: [judge] }) });
    const [attempt] = await s.reads.listAttempts(first.runId);
    expect(attempt).toMatchObject({ status: "scored", retries: 1 });

    // The rescore asks the judge again: the mock fails that request once more.
    mock.reset();
    const rescored = await rescoreRun({
      store: s,
      runId: first.runId,
      eval: engineEval(solver, { scorers: [judge] }),
      scorers: ["model_graded"],
    });
    expect(Object.values(mock.counts())).toEqual([2]);
    const [scoring] = await s.reads.listScorings(first.runId);
    expect(scoring).toMatchObject({ status: "scored", retries: 1 });
    // The attempt's count stands; the run's total is over attempts and scorings.
    expect((await s.reads.listAttempts(first.runId))[0]).toMatchObject({ retries: 1 });
    expect(rescored.retries.total).toBe(2);
    expect((await storedReport(s, (await s.runs.get(first.runId))!)).retries.total).toBe(2);
  });

  it("a call replayed from the journal re-sends nothing, so it adds nothing", async () => {
    const mock = await failing((key) => (key === "one" ? 2 : key === "two" ? 1 : 0));
    const s = store();
    const abort = new AbortController();
    const make =
      (stop: boolean): SolverFn =>
      async (_, ctx) => {
        const endpoint = { model: "m", baseURL: mock.url, ...fast };
        await ctx.chat({ ...endpoint, messages: [{ role: "user", content: "one" }] });
        if (stop) {
          abort.abort();
          await new Promise((r) => setTimeout(r, 1_000));
        }
        const b = await ctx.chat({ ...endpoint, messages: [{ role: "user", content: "two" }] });
        return b.content;
      };
    const interrupted = await runEval({
      store: s,
      eval: engineEval(make(true)),
      abortSignal: abort.signal,
    });
    expect(interrupted.status).toBe("interrupted");
    expect(await s.reads.listAttempts(interrupted.runId)).toEqual([]);
    const resumed = await resumeRun({
      store: s,
      runId: interrupted.runId,
      eval: engineEval(make(false)),
    });
    // "one" was asked 3 times by the killed execution only; the resume replayed its reply.
    expect(mock.counts()).toEqual({ one: 3, two: 2 });
    const [attempt] = await s.reads.listAttempts(interrupted.runId);
    expect(attempt).toMatchObject({ status: "scored", retries: 1 });
    expect(resumed.retries).toEqual({ total: 1, keysRetried: 0, unrecorded: 0 });
  });
});
