import { describe, expect, it } from "vitest";
import { storesPerTest, tempDir } from "../../test/helpers/temp-store.js";
import type { Scorer, SolverFn } from "../core/eval.js";
import { planRun } from "../core/plan.js";
import { createSecretRedactor } from "../core/secrets.js";
import { newRun } from "../store/contract/fixtures.js";
import { AttemptWriter } from "./attempt-writer.js";
import { KeyJournals } from "./key-journal.js";
import { KeyRunner } from "./key-runner.js";
import { RunProgress } from "./run-progress.js";
import { StopControl } from "./stop-control.js";

const store = storesPerTest();
const key = { sampleId: "s1", epoch: 1 };

/** A key runner over a real SQLite store and writer, for a run of s1 with `retries` retries. */
async function runner(
  solver: SolverFn,
  scorers: Scorer[],
  retries: number,
  journaled = false,
  timeoutMs?: number,
) {
  const s = store();
  const config = { retries, epochs: 1, ...(timeoutMs === undefined ? {} : { timeoutMs }) };
  const { run, owner, samples } = await newRun(s, { ids: ["s1"], config });
  const dir = tempDir();
  const writer = new AttemptWriter({
    store: s,
    runId: run.id,
    token: owner.token,
    fallbackDirs: [dir.dir],
  });
  const plan = planRun({ snapshot: samples, epochs: 1, attempts: [], inflight: [] });
  const counts = new RunProgress(plan, 1, () => {});
  const stops = new StopControl({ emit: () => {}, inflight: () => counts.progress.inflight });
  const finals: boolean[] = [];
  const keys = new KeyRunner({
    run,
    plan,
    solver,
    scorers,
    pass: "p1",
    writer,
    counts,
    stops,
    gate: undefined,
    journals: await KeyJournals.open({
      store: s,
      runId: run.id,
      plan,
      writer,
      journaled,
      resumed: false,
      leased: false,
    }),
    redactor: createSecretRedactor([]),
    committed: (attempt, final) => {
      finals.push(final);
      counts.attemptCommitted(attempt, final);
    },
    emit: () => {},
  });
  return { s, run, keys, finals, counts, stops, cleanup: dir.cleanup };
}

const exact: Scorer = { name: "exact", score: () => 1 };

describe("KeyRunner", () => {
  it("retries a failing solver up to the run's retries, each attempt committed before it counts", async () => {
    let calls = 0;
    const solver: SolverFn = () => {
      if (++calls < 3) throw Object.assign(new Error("HTTP 500"), { type: "provider" });
      return "4";
    };
    const r = await runner(solver, [exact], 2);
    expect(await r.keys.run(key)).toBe("scored");
    expect(r.finals).toEqual([false, false, true]);
    const stored = await r.s.reads.listAttempts(r.run.id);
    expect(stored.map((a) => [a.attempt, a.status])).toEqual([
      [1, "error"],
      [2, "error"],
      [3, "scored"],
    ]);
    expect(r.counts.progress).toMatchObject({ executed: 3, done: 1, errored: 0, inflight: 0 });
    r.cleanup();
  });

  it("an error is the key's outcome once its retries ran out", async () => {
    const r = await runner(() => Promise.reject(new Error("no")), [exact], 1);
    expect(await r.keys.run(key)).toBe("errored");
    expect(r.finals).toEqual([false, true]);
    expect(r.counts.progress).toMatchObject({ executed: 2, errored: 1 });
    r.cleanup();
  });

  it("a stop leaves an errored key to a resume (abandoned), without another attempt", async () => {
    const stopping: { stops?: StopControl } = {};
    const solver: SolverFn = () => {
      // A signal arrives while the attempt runs (a graceful stop lets it finish).
      stopping.stops?.gracefully("signal", "interrupted by a signal");
      return Promise.reject(new Error("no"));
    };
    const r = await runner(solver, [exact], 3);
    stopping.stops = r.stops;
    expect(await r.keys.run(key)).toBe("abandoned");
    expect(r.finals).toEqual([true]);
    expect(await r.s.reads.listAttempts(r.run.id)).toHaveLength(1);
    r.cleanup();
  });

  it("a scorer error's retries score the stored output again, never solve it again", async () => {
    let solved = 0;
    let judged = 0;
    const flaky: Scorer = {
      name: "judge",
      score: () => {
        if (++judged === 1) throw new Error("no GRADE line");
        return 1;
      },
    };
    const r = await runner(() => `answer ${++solved}`, [flaky], 2);
    expect(await r.keys.run(key)).toBe("scored");
    expect(solved).toBe(1);
    expect(r.finals).toEqual([false]);
    const [scoring] = await r.s.reads.listScorings(r.run.id);
    expect(scoring).toMatchObject({ attempt: 1, pass: "p1", status: "scored" });
    expect(r.counts.scorings.committed).toBe(1);
    expect(r.counts.progress).toMatchObject({ done: 1, errored: 0 });
    r.cleanup();
  });

  it("each retry replays the steps its errored attempt ran, and binds them: the third replays the second's", async () => {
    const ran: string[] = [];
    let attempts = 0;
    const run = (name: string, value: number) => () => {
      ran.push(name);
      return value;
    };
    const solver: SolverFn = async (_sample, ctx) => {
      attempts++;
      const a = await ctx.step("a", {}, run("a", 1));
      const b = await ctx.step("b", { a }, run("b", 2));
      // The third step fails on the first two attempts: it is journaled, and runs again.
      const c = await ctx.step("c", { b }, () => {
        ran.push("c");
        if (attempts < 3) throw new Error("tool down");
        return 3;
      });
      return String(a + b + c);
    };
    const r = await runner(solver, [exact], 2, true);
    expect(await r.keys.run(key)).toBe("scored");
    expect(ran).toEqual(["a", "b", "c", "c", "c"]);
    const journal = await r.s.journal.list(r.run.id);
    expect(journal.map((e) => [e.attempt, e.name, e.error?.message ?? null])).toEqual([
      [1, "a", null],
      [1, "b", null],
      [1, "c", "tool down"],
      [2, "a", null],
      [2, "b", null],
      [2, "c", "tool down"],
      [3, "a", null],
      [3, "b", null],
      [3, "c", null],
    ]);
    r.cleanup();
  });

  it("a timed-out attempt's steps are replayed by its retry", async () => {
    const ran: string[] = [];
    let attempts = 0;
    const solver: SolverFn = async (_sample, ctx) => {
      const first = ++attempts === 1;
      const a = await ctx.step("a", {}, () => ran.push("a"));
      // The first attempt then waits until its timeout aborts it.
      if (first) await new Promise((_, reject) => ctx.signal.addEventListener("abort", reject));
      return String(a);
    };
    const r = await runner(solver, [exact], 1, true, 50);
    expect(await r.keys.run(key)).toBe("scored");
    expect(ran).toEqual(["a"]);
    const stored = await r.s.reads.listAttempts(r.run.id);
    expect(stored.map((a) => [a.attempt, a.status, a.error?.type])).toEqual([
      [1, "error", "timeout"],
      [2, "scored", undefined],
    ]);
    r.cleanup();
  });
});
