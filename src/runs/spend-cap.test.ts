import { describe, expect, it } from "vitest";
import { storesPerTest } from "../../test/helpers/temp-store.js";
import type { EngineEval, SolverFn } from "../core/eval.js";
import type { RunEvent } from "../core/events.js";
import { fingerprintSample } from "../core/fingerprint.js";
import type { SampleRecord } from "../core/types.js";
import { resumeRun } from "./resume-run.js";
import { runEval } from "./start-run.js";

const store = storesPerTest();

const records = (n: number): SampleRecord[] =>
  Array.from({ length: n }, (_, i) => {
    const sample = { id: `q${String(i).padStart(3, "0")}`, input: i, target: "ok" };
    return { sample, fingerprint: fingerprintSample(sample) };
  });

/** Costs from 0.005 to 0.029, by sample: a mean that is only an estimate. */
const costOf = (input: number) => 0.005 + (input % 25) * 0.001;

/**
 * A solver that records, at each dispatch, how many were in flight and what the run's committed
 * spend was then (from the engine's own events), so the dispatch rule can be checked.
 */
function spendingEval(n: number, concurrency: number) {
  const seen = { spent: 0, inflight: 0, calls: [] as { inflight: number; spent: number }[] };
  const solver: SolverFn = async (sample) => {
    seen.calls.push({ inflight: seen.inflight, spent: seen.spent });
    seen.inflight++;
    await new Promise((r) => setTimeout(r, 2 + (Number(sample.input) % 3)));
    seen.inflight--;
    const costUsd = costOf(Number(sample.input));
    return { output: "ok", usage: { inputTokens: 10, outputTokens: 1, costUsd } };
  };
  const ev: EngineEval = {
    name: "spend",
    samples: records(n),
    solver,
    scorers: [{ name: "exact", score: ({ output }) => output === "ok" }],
    epochs: 1,
    reducer: "mean",
    concurrency,
    retries: 0,
  };
  const events: RunEvent[] = [];
  const onEvent = (event: RunEvent) => {
    events.push(event);
    if (event.type === "attempt-committed") seen.spent += event.attempt.usage?.costUsd ?? 0;
  };
  return { ev, seen, events, onEvent };
}

describe("the spend cap in the engine", () => {
  it("dispatches the first key alone, then never past the cap: the overshoot is the in-flight keys'", async () => {
    const s = store();
    const { ev, seen, events, onEvent } = spendingEval(100, 6);
    const report = await runEval({ store: s, eval: { ...ev, maxCost: 0.3 }, onEvent });

    expect(report.status).toBe("interrupted");
    expect(report.stopped).toMatchObject({ reason: "budget" });
    expect(report.stopped?.note).toMatch(/^budget: spent \$0\.\d{2,4} of the \$0\.30 cap$/);
    expect(report.budget).toEqual({
      maxCostUsd: 0.3,
      spentUsd: report.usage.totalSpent.costUsd,
      reached: true,
    });
    // The probe: the second key was dispatched only after the first was committed.
    expect(seen.calls[0]).toEqual({ inflight: 0, spent: 0 });
    expect(seen.calls[1]!.spent).toBeGreaterThan(0);
    expect(Math.max(...seen.calls.map((c) => c.inflight))).toBe(5); // then the pool was full
    // Every dispatch happened with the committed spend below the cap …
    expect(seen.calls.every((c) => c.spent < 0.3)).toBe(true);
    // … so the total is at most the cap plus what was in flight at the last dispatch.
    const spent = report.usage.totalSpent.costUsd;
    const last = seen.calls.at(-1)!;
    expect(spent).toBeLessThanOrEqual(0.3 + (last.inflight + 1) * 0.029 + 1e-9);
    expect(spent).toBeGreaterThan(0.3 - 7 * 0.029);
    expect(report.counts.remaining).toBe(100 - seen.calls.length);
    const stops = events.filter((e) => e.type === "stopping");
    expect(stops).toEqual([expect.objectContaining({ reason: "budget" })]);
    const run = await s.runs.get(report.runId);
    expect(run).toMatchObject({ status: "interrupted", note: report.stopped!.note });
    expect(run!.config.maxCostUsd).toBe(0.3);
  });

  it("a resume counts what the run spent before: its cap is on the total", async () => {
    const s = store();
    const first = spendingEval(100, 4);
    const stopped = await runEval({ store: s, eval: { ...first.ev, maxCost: 0.2 } });
    const before = stopped.usage.totalSpent.costUsd;

    // The recorded cap, already reached: nothing is dispatched.
    const again = spendingEval(100, 4);
    const kept = await resumeRun({ store: s, runId: stopped.runId, eval: again.ev });
    expect(again.seen.calls).toHaveLength(0);
    expect(kept).toMatchObject({ status: "interrupted", stopped: { reason: "budget" } });

    // A higher cap for this resume: it spends about 0.5 − before, not 0.5 more.
    const more = spendingEval(100, 4);
    const resumed = await resumeRun({
      store: s,
      runId: stopped.runId,
      eval: more.ev,
      maxCost: 0.5,
    });
    // The run had a mean cost already: no probe, the second key went out with the first.
    expect(more.seen.calls[1]).toMatchObject({ inflight: 1, spent: 0 });
    expect(Math.max(...more.seen.calls.map((c) => c.inflight))).toBe(3);
    const total = resumed.usage.totalSpent.costUsd;
    expect(total).toBeLessThanOrEqual(0.5 + 4 * 0.029 + 1e-9);
    expect(total).toBeGreaterThan(0.5 - 5 * 0.029);
    expect(resumed.usage.spentNow.costUsd).toBeCloseTo(total! - before!, 9);
    expect(resumed.budget).toMatchObject({ maxCostUsd: 0.5, reached: true });
    // The override is not recorded.
    expect((await s.runs.get(stopped.runId))!.config.maxCostUsd).toBe(0.2);

    // Without a cap the rest runs, and every key was executed exactly once.
    const rest = spendingEval(100, 4);
    const done = await resumeRun({ store: s, runId: stopped.runId, eval: rest.ev, maxCost: 100 });
    expect(done).toMatchObject({ status: "completed", counts: { scored: 100 } });
    expect(done.budget).toMatchObject({ maxCostUsd: 100, reached: false });
    expect(done.stopped).toBeUndefined();
    const executed = first.seen.calls.length + more.seen.calls.length + rest.seen.calls.length;
    expect(executed).toBe(100);
  });

  it("a retry is a dispatch too: it waits on the same verdict", async () => {
    const s = store();
    const { ev, seen } = spendingEval(3, 1);
    // Every solve costs $0.02 and its scorer throws: each attempt is a paid `scorer` error
    // that the retries would buy again.
    const solver: SolverFn = async (sample, ctx) => {
      await ev.solver(sample, ctx);
      return { output: "ok", usage: { inputTokens: 1, outputTokens: 1, costUsd: 0.02 } };
    };
    const failing = { name: "exact", score: () => Promise.reject(new Error("judge down")) };
    const report = await runEval({
      store: s,
      eval: { ...ev, solver, scorers: [failing], retries: 5, maxCost: 0.05 },
    });
    // 0.02, then 0.04 (0.02 + 0.02 fits), then 0.04 + 0.02 would not: no third attempt.
    expect(seen.calls).toHaveLength(2);
    expect(report).toMatchObject({ status: "interrupted", stopped: { reason: "budget" } });
    expect(report.usage.totalSpent.costUsd).toBeCloseTo(0.04, 9);
  });

  it("refuses a cap that is not a positive number", async () => {
    const s = store();
    const { ev } = spendingEval(3, 1);
    const report = await runEval({ store: s, eval: ev });
    for (const maxCost of [0, -1, Number.NaN, Number.POSITIVE_INFINITY]) {
      await expect(resumeRun({ store: s, runId: report.runId, eval: ev, maxCost })).rejects.toThrow(
        /maxCost: expected a number of US dollars above 0/,
      );
    }
  });
});
