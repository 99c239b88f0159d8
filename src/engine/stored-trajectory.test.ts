import { describe, expect, it } from "vitest";
import type { EngineEval, Scorer, SolverFn } from "../core/eval.js";
import { fingerprintSample } from "../core/fingerprint.js";
import type { Trajectory } from "../core/trajectory.js";
import type { Sample, SampleRecord } from "../core/types.js";
import { resumeRun } from "../runs/resume-run.js";
import { runEval } from "../runs/start-run.js";
import { storesPerTest } from "../../test/helpers/temp-store.js";
import { NOT_JOURNALED, storedTrajectory } from "./stored-trajectory.js";

const store = storesPerTest();

const records = (n: number): SampleRecord[] =>
  Array.from({ length: n }, (_, i) => {
    const sample: Sample = { id: `s${i}`, input: `task ${i}` };
    return { sample, fingerprint: fingerprintSample(sample) };
  });

/** A scorer that keeps the trajectory each sample's scoring was given. */
function recorder() {
  const seen = new Map<string, Trajectory | undefined>();
  const scorer: Scorer = {
    name: "seen",
    score: ({ sample, trajectory }) => {
      seen.set(sample.id, trajectory);
      return 1;
    },
  };
  return { scorer, seen };
}

/** Three `tool:work` steps; aborted (as a SIGKILL would) once both samples ran `stopAfter`. */
function agent(stopAfter?: number) {
  const abort = new AbortController();
  let reached = 0;
  const solver: SolverFn = async (sample, ctx) => {
    for (let i = 0; i < 3; i++) {
      if (stopAfter === i && ++reached === 2) abort.abort();
      if (stopAfter === i) await new Promise<never>(() => {});
      await ctx.step("tool:work", { i }, () => `${sample.id} ${i}`);
    }
    return "done";
  };
  return { solver, abort };
}

function engineEval(solver: SolverFn, scorer: Scorer, extra: Partial<EngineEval> = {}) {
  const ev: EngineEval = {
    name: "trajectory",
    samples: records(2),
    solver,
    scorers: [scorer],
    epochs: 1,
    reducer: "mean",
    concurrency: 2,
    retries: 0,
    ...extra,
  };
  return ev;
}

const tools = (t: Trajectory | undefined) => (t?.known ? t.toolCalls : t);

describe("an attempt's trajectory", () => {
  it("right after a resumed attempt, holds the steps replayed from the journal and the new ones, in order", async () => {
    const s = store();
    const first = agent(2);
    const report = await runEval({
      store: s,
      eval: engineEval(first.solver, recorder().scorer),
      abortSignal: first.abort.signal,
    });
    expect(report.status).toBe("interrupted");
    const { scorer, seen } = recorder();
    await resumeRun({ store: s, runId: report.runId, eval: engineEval(agent().solver, scorer) });
    expect(tools(seen.get("s1"))).toEqual(
      [0, 1, 2].map((i) => ({ name: "work", arguments: { i } })),
    );
    // The store's trajectory of the attempt is the same one.
    const stored = await storedTrajectory(
      { store: s, runId: report.runId, journaled: true },
      { key: { sampleId: "s1", epoch: 1 }, attempt: 1 },
    );
    expect(stored).toEqual(seen.get("s1"));
  });

  it("is unknown, with the reason, when the eval journals nothing or the journal was pruned", async () => {
    const s = store();
    const { scorer, seen } = recorder();
    const unjournaled = agent().solver;
    unjournaled.journal = false;
    await runEval({ store: s, eval: engineEval(unjournaled, scorer) });
    expect(seen.get("s0")).toEqual({ known: false, reason: NOT_JOURNALED });

    const report = await runEval({ store: s, eval: engineEval(agent().solver, scorer) });
    await s.journal.prune(report.runId, "failed");
    const ref = { key: { sampleId: "s0", epoch: 1 }, attempt: 1 };
    const options = { store: s, runId: report.runId, journaled: true };
    expect(await storedTrajectory({ ...options, keep: "failed" }, ref)).toEqual({
      known: false,
      reason:
        'the journal of sample s0 epoch 1 attempt 1 was pruned (journal: { keep: "failed" }): its trajectory is gone',
    });
    // A failed attempt keeps its journal under "failed": none there means it made no step.
    expect(
      await storedTrajectory({ ...options, keep: "failed" }, { ...ref, failed: true }),
    ).toEqual({ known: true, events: [], calls: [], steps: [], toolCalls: [] });
  });
});
