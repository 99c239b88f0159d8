import { afterEach, describe, expect, it } from "vitest";
import type { EngineEval, SolverFn } from "../core/eval.js";
import type { RunEvent } from "../core/events.js";
import { fingerprintSample } from "../core/fingerprint.js";
import type { SampleRecord } from "../core/types.js";
import type { Store } from "../store/types.js";
import { tempStore } from "../../test/helpers/temp-store.js";
import { until } from "../../test/helpers/wait.js";
import { runEval } from "./start-run.js";

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

/**
 * A real SQLite store whose commits wait at a gate until `open()`: the disk, slowed down at will.
 * Heartbeats and everything else go straight through.
 */
function gatedStore() {
  const t = tempStore();
  cleanups.push(t.cleanup);
  let open: () => void = () => {};
  const gate = new Promise<void>((resolve) => (open = resolve));
  let commitsStarted = 0;
  const store: Store = Object.create(t.store) as Store;
  store.recordAttempts = async (...args) => {
    commitsStarted++;
    await gate;
    return t.store.recordAttempts(...args);
  };
  return { store, open: () => open(), commitsStarted: () => commitsStarted };
}

const records: SampleRecord[] = Array.from({ length: 6 }, (_, i) => {
  const sample = { id: `q${i}`, input: `question ${i}`, target: `question ${i}` };
  return { sample, fingerprint: fingerprintSample(sample) };
});

function echo(overrides: Partial<EngineEval> = {}) {
  const calls: string[] = [];
  const solver: SolverFn = (sample) => {
    calls.push(sample.id);
    return String(sample.input);
  };
  const ev: EngineEval = {
    name: "echo",
    samples: records,
    solver,
    scorers: [{ name: "exact", score: ({ sample, output }) => output === sample.target }],
    epochs: 1,
    reducer: "mean",
    concurrency: 1,
    retries: 0,
    ...overrides,
  };
  return { ev, calls };
}

describe("a slot is refilled before its attempt's commit", () => {
  it("dispatches the next key while the commit is under way, one commit ahead per worker, and counts a key only once committed", async () => {
    const { store, open, commitsStarted } = gatedStore();
    const { ev, calls } = echo();
    const events: RunEvent[] = [];
    const running = runEval({ store, eval: ev, onEvent: (e) => events.push(e) });

    // q0's commit is held at the gate, and q1 runs all the same.
    await until(
      () => calls.length === 2 && commitsStarted() > 0,
      "q1 running during q0's commit",
      10_000,
    );
    // q2 waits for q0's commit: the worker keeps at most one commit outstanding. Were it not
    // held back, the instant solver would reach q2 within microseconds; give it ample time.
    await new Promise((r) => setTimeout(r, 100));
    expect(calls).toEqual(["q0", "q1"]);
    expect(events.filter((e) => e.type === "attempt-committed")).toEqual([]);

    open();
    const report = await running;
    expect(calls).toEqual(["q0", "q1", "q2", "q3", "q4", "q5"]);
    expect(report.status).toBe("completed");
    const committed = events.flatMap((e) => (e.type === "attempt-committed" ? [e] : []));
    expect(committed.map((e) => e.attempt.sampleId)).toEqual(calls);
    // Progress counts only what is committed: one more done with each commit event.
    expect(committed.map((e) => e.progress.done)).toEqual([1, 2, 3, 4, 5, 6]);
  });

  it("a retry waits for the commit of the attempt it follows, so attempts number in order", async () => {
    const { store, open } = gatedStore();
    let tries = 0;
    const { ev } = echo({
      samples: records.slice(0, 1),
      retries: 2,
      solver: () => {
        tries++;
        if (tries < 3) throw new Error(`flaky ${tries}`);
        return "question 0";
      },
    });
    const running = runEval({ store, eval: ev });
    await until(() => tries === 1, "the first try");
    await new Promise((r) => setTimeout(r, 100));
    expect(tries).toBe(1);
    open();
    const report = await running;
    expect(report.status).toBe("completed");
    const attempts = await store.listAttempts(report.runId);
    expect(attempts.map((a) => [a.attempt, a.status, a.error?.message ?? null])).toEqual([
      [1, "error", "flaky 1"],
      [2, "error", "flaky 2"],
      [3, "scored", null],
    ]);
  });
});
