import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { fingerprintSample } from "../src/core/fingerprint.js";
import type { SampleRecord } from "../src/core/types.js";
import type { EngineEval } from "../src/core/eval.js";
import { resumeRun } from "../src/runs/resume-run.js";
import { runEval } from "../src/runs/start-run.js";
import { scorers } from "../src/scorers/index.js";
import { solvers } from "../src/solvers/index.js";
import { startMockOpenAI, type MockOpenAI } from "./helpers/mock-openai.js";
import { tempStore } from "./helpers/temp-store.js";

let mock: MockOpenAI;
let broken = new Set<string>();
beforeAll(async () => {
  mock = await startMockOpenAI({
    respond: ({ key }) =>
      broken.has(key)
        ? { status: 500, body: { error: { message: "upstream exploded" } } }
        : undefined,
  });
});
afterAll(() => mock.close());
const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

const samples: SampleRecord[] = ["alpha", "beta", "gamma"].map((id) => {
  const sample = { id, input: `say ${id}`, target: `say ${id}` };
  return { sample, fingerprint: fingerprintSample(sample) };
});

function chatEval(): EngineEval {
  return {
    name: "chat-errors",
    samples,
    solver: solvers.chat({
      model: "gpt-4o-mini",
      baseURL: mock.url,
      apiKey: "sk-test",
      maxRetries: 2,
      backoff: { initialMs: 1, maxMs: 5 },
    }),
    scorers: [scorers.exact()],
    epochs: 1,
    reducer: "mean",
    concurrency: 3,
    retries: 0,
  };
}

describe("chat solver failures through the engine", () => {
  it("records HTTP 500 after retries as a provider error attempt; resume re-runs it and keeps both", async () => {
    const { store, cleanup } = tempStore();
    cleanups.push(cleanup);
    broken = new Set(["say beta"]);
    const report = await runEval({ store, eval: chatEval() });
    expect(report.status).toBe("errored");
    expect(mock.counts()["say beta"]).toBe(3); // the first request and two retries
    const [failed] = (await store.reads.listAttempts(report.runId)).filter(
      (a) => a.status === "error",
    );
    expect(failed).toMatchObject({ sampleId: "beta", error: { type: "provider", status: 500 } });
    expect(failed!.error!.message).toContain("500");

    broken = new Set();
    mock.reset();
    const resumed = await resumeRun({ store, runId: report.runId, eval: chatEval() });
    expect(resumed.status).toBe("completed");
    expect(mock.counts()).toEqual({ "say beta": 1 });
    const history = (await store.reads.listAttempts(report.runId)).filter(
      (a) => a.sampleId === "beta",
    );
    expect(history.map((a) => [a.attempt, a.status])).toEqual([
      [1, "error"],
      [2, "scored"],
    ]);
    expect(resumed.usage.spentNow.attempts).toBe(1);
  });
});
