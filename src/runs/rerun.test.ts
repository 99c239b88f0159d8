import { describe, expect, it, vi } from "vitest";
import { fingerprintSample } from "../core/fingerprint.js";
import type { EngineEval, SolverFn } from "../core/eval.js";
import type { SampleRecord } from "../core/types.js";
import { bothStores } from "../../test/helpers/both-stores.js";
import type { Store } from "../store/types.js";
import { figuresReport } from "../engine/figures-report.js";
import { recordedReruns } from "../engine/rerun-plan.js";
import { foldedReport, storedReport } from "../engine/report.js";
import { withFigures } from "./list-run-figures.js";
import type { ListedRun } from "./read-run.js";
import { planResume, resumeRun } from "./resume-run.js";
import { runEval } from "./start-run.js";

const samples: SampleRecord[] = ["a", "b", "c", "d", "e"].map((id) => {
  const sample = { id, input: id, target: id };
  return { sample, fingerprint: fingerprintSample(sample) };
});

/** One solver function for every run (the run's identity is its source): calls counted per id. */
const calls = new Map<string, number>();
const solver: SolverFn = async function echo(sample) {
  calls.set(sample.id, (calls.get(sample.id) ?? 0) + 1);
  await new Promise((r) => setTimeout(r, 5));
  return { output: sample.id, usage: { inputTokens: 1, outputTokens: 1, costUsd: 0.01 } };
};

function ev(): EngineEval {
  return {
    name: "rerun",
    samples,
    solver,
    scorers: [{ name: "same", score: ({ sample, output }) => output === sample.target }],
    epochs: 2,
    reducer: "mean",
    concurrency: 1,
    retries: 0,
  };
}

const stores = bothStores();

/**
 * The run's report and listed figures read from the store's figures equal a fold of every
 * attempt, with a re-run request open (its plan from the requested keys' attempts) or not.
 */
async function reportsAgree(store: Store, runId: string): Promise<void> {
  const run = (await store.runs.get(runId))!;
  const folded = await foldedReport(store, run);
  expect(await figuresReport(store, run, { invocation: false })).toEqual(folded);
  expect(await storedReport(store, run)).toEqual(folded);
  const [listed] = await withFigures(store, [{ run } as ListedRun]);
  expect(listed!.metrics).toEqual(folded.metrics);
  expect(listed!.spent).toEqual(folded.usage.totalSpent);
}

describe.each(stores)("re-running chosen keys on %s", (_name, open, skip) => {
  if (skip) return;
  it("finishes a killed re-run on the next plain resume, and never repeats a finished one", async () => {
    const store = await open();
    const first = await runEval({ store, eval: ev() });
    expect(first.status).toBe("completed");
    calls.clear();

    // Re-run b, c and d (2 epochs each: 6 keys), stopped after the first two commits.
    const stop = new AbortController();
    let committed = 0;
    const killed = await resumeRun({
      store,
      runId: first.runId,
      eval: ev(),
      rerun: ["b", "c", "d"],
      signal: stop.signal,
      onEvent: (e) => {
        if (e.type === "attempt-committed" && ++committed === 2) stop.abort();
      },
    });
    // Every key still has an outcome (the earlier attempts), but the request is not done: the
    // run is interrupted, resumable; the request stays recorded until its keys are re-run.
    expect(killed.status).toBe("interrupted");
    const executedFirst = [...calls.values()].reduce((a, b) => a + b, 0);
    expect(executedFirst).toBeGreaterThanOrEqual(2);
    expect(executedFirst).toBeLessThan(6);
    // The release let the requests already done go; the open ones stay.
    expect(await recordedReruns(store, first.runId)).toHaveLength(6 - executedFirst);
    await reportsAgree(store, first.runId);

    // A plain resume finishes exactly the keys of the request not yet re-run.
    calls.clear();
    const planning = await planResume({ store, runId: first.runId, eval: ev() });
    expect(planning.ok && planning.resume.plan.rerun).toBe(6 - executedFirst);
    const finished = await resumeRun({ store, runId: first.runId, eval: ev() });
    expect(finished.status).toBe("completed");
    // Every request done, and let go when the resume released the run.
    expect(await recordedReruns(store, first.runId)).toEqual([]);
    await reportsAgree(store, first.runId);
    expect([...calls.values()].reduce((a, b) => a + b, 0)).toBe(6 - executedFirst);

    // Every re-run key now has two scored attempts, the newer its outcome; a, e have one.
    const attempts = await store.reads.listAttempts(first.runId);
    const perKey = new Map<string, number[]>();
    for (const a of attempts) {
      const k = `${a.sampleId}#${a.epoch}`;
      perKey.set(k, [...(perKey.get(k) ?? []), a.attempt]);
    }
    for (const id of ["b", "c", "d"]) {
      for (const epoch of [1, 2]) expect(perKey.get(`${id}#${epoch}`)).toEqual([1, 2]);
    }
    expect(perKey.get("a#1")).toEqual([1]);
    const outcomes = await store.reads.listOutcomes(first.runId, { sampleId: "c" });
    expect(outcomes.entries.map((e) => e.outcome?.attempt)).toEqual([2, 2]);

    // Nothing more, ever, without a new request; the done requests, still recorded, have the
    // plan read their samples' attempts, not the run's.
    calls.clear();
    const everyHead = vi.spyOn(store.reads, "listAttemptHeads");
    const again = await planResume({ store, runId: first.runId, eval: ev() });
    expect(everyHead).not.toHaveBeenCalled();
    everyHead.mockRestore();
    expect(again.ok).toBe(false);
    if (!again.ok) expect(again.refusal.reason).toBe("nothing-to-resume");
    await resumeRun({ store, runId: first.runId, eval: ev() });
    expect(calls.size).toBe(0);

    // A new request re-runs again, as asked: a third attempt.
    await resumeRun({ store, runId: first.runId, eval: ev(), rerun: ["c"] });
    expect(calls.get("c")).toBe(2);
    expect((await store.reads.listAttempts(first.runId, { sampleId: "c", epoch: 1 })).length).toBe(
      3,
    );
  });

  it("refuses unknown ids as E_USAGE, writing nothing", async () => {
    const store = await open();
    const first = await runEval({ store, eval: ev() });
    const planning = await planResume({
      store,
      runId: first.runId,
      eval: ev(),
      rerun: ["b", "zz"],
    });
    expect(planning.ok).toBe(false);
    if (planning.ok) return;
    expect(planning.refusal).toMatchObject({ reason: "invalid-rerun", error: { code: "E_USAGE" } });
    expect(planning.refusal.error.message).toContain("zz");
  });
});
