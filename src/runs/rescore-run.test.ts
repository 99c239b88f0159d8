import { afterEach, describe, expect, it } from "vitest";
import { fingerprintSample } from "../core/fingerprint.js";
import type { EngineEval, Scorer } from "../core/eval.js";
import type { SampleRecord } from "../core/types.js";
import { tempStore } from "../../test/helpers/temp-store.js";
import { rescoreRun } from "./rescore-run.js";
import { runEval } from "./start-run.js";

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

const samples: SampleRecord[] = ["a", "b", "c", "d"].map((id) => {
  const sample = { id, input: id, target: id };
  return { sample, fingerprint: fingerprintSample(sample) };
});

function ev(scorers: Scorer[]): EngineEval {
  return {
    name: "judged",
    samples,
    solver: (sample) => ({
      output: String(sample.input),
      usage: { inputTokens: 10, outputTokens: 2, costUsd: 0.01 },
    }),
    scorers,
    epochs: 1,
    reducer: "mean",
    concurrency: 2,
    retries: 0,
  };
}

/** A judge that pays for every grade it gives. */
const judge: Scorer = {
  name: "judge",
  score: () => ({ value: 1, usage: { inputTokens: 100, outputTokens: 5, costUsd: 0.002 } }),
};

describe("rescoreRun", () => {
  it("counts a judge's spend once, as the scoring's: spent now and on the run, never the attempts'", async () => {
    const { store, cleanup } = tempStore();
    cleanups.push(cleanup);
    const first = await runEval({ store, eval: ev([{ name: "exact", score: () => 1 }]) });
    expect(first.usage.totalSpent.costUsd).toBeCloseTo(0.04, 12);
    const attempts = await store.reads.listAttempts(first.runId, { asCommitted: true });

    const report = await rescoreRun({ store, runId: first.runId, eval: ev([judge]) });
    expect(report).toMatchObject({ rescored: 4, executed: 0 });
    expect(report.usage.spentNow).toMatchObject({
      attempts: 0,
      inputTokens: 400,
      outputTokens: 20,
    });
    expect(report.usage.spentNow.costUsd).toBeCloseTo(0.008, 12);
    expect(report.usage.totalSpent.costUsd).toBeCloseTo(0.048, 12);
    // What was not re-bought: every output, none executed again.
    expect(report.usage.reused.costUsd).toBeCloseTo(0.04, 12);
    expect(await store.reads.listAttempts(first.runId, { asCommitted: true })).toEqual(attempts);
    const scorings = await store.reads.listScorings(first.runId);
    expect(scorings.map((s) => s.usage?.costUsd)).toEqual([0.002, 0.002, 0.002, 0.002]);
  });
});
