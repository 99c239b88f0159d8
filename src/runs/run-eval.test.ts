import { afterEach, describe, expect, it } from "vitest";
import { fingerprintSample } from "../core/fingerprint.js";
import type { Scorer, SolverFn } from "../core/eval.js";
import type { RunEvent } from "../core/events.js";
import type { Sample, SampleRecord } from "../core/types.js";
import { tempStore } from "../../test/helpers/temp-store.js";
import type { Store } from "../store/types.js";
import { until } from "../../test/helpers/wait.js";
import { resumeRun } from "../runs/resume-run.js";
import { runEval } from "../runs/start-run.js";
import type { EngineEval } from "../core/eval.js";

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});
function store() {
  const t = tempStore();
  cleanups.push(t.cleanup);
  return t.store;
}

const records = (n: number, change?: (s: Sample) => Sample): SampleRecord[] =>
  Array.from({ length: n }, (_, i) => {
    const base: Sample = {
      id: `q${String(i).padStart(3, "0")}`,
      input: `${i} + ${i}`,
      target: String(2 * i),
    };
    const sample = change ? change(base) : base;
    return { sample, fingerprint: fingerprintSample(sample) };
  });

/** A deterministic solver that is wrong on every third sample, counting its calls per key. */
function countingEval(samples: SampleRecord[], overrides: Partial<EngineEval> = {}) {
  const calls = new Map<string, number>();
  let scorerCalls = 0;
  const solver: SolverFn = async (sample, ctx) => {
    const key = `${sample.id}#${ctx.epoch}`;
    calls.set(key, (calls.get(key) ?? 0) + 1);
    await new Promise((r) => setTimeout(r, 1));
    const n = Number(String(sample.input).split(" + ")[0]);
    return {
      output: n % 3 === 0 && ctx.epoch === 1 ? "wrong" : String(2 * n),
      usage: { inputTokens: 10, outputTokens: 2, costUsd: 0.001 },
    };
  };
  const exact: Scorer = {
    name: "exact",
    score: ({ sample, output }) => {
      scorerCalls++;
      return output === sample.target;
    },
  };
  const ev: EngineEval = {
    name: "double",
    samples,
    solver,
    scorers: [exact],
    epochs: 2,
    reducer: "mean",
    concurrency: 4,
    retries: 0,
    ...overrides,
  };
  return { ev, calls, scorerCalls: () => scorerCalls };
}

describe("runEval", () => {
  it("stores N × E attempts and the expected aggregate", async () => {
    const s = store();
    const { ev, calls } = countingEval(records(30));
    const report = await runEval({ store: s, eval: ev });
    expect(report.status).toBe("completed");
    expect(await s.reads.listAttempts(report.runId)).toHaveLength(60);
    expect(calls.size).toBe(60);
    // 10 of 30 samples are wrong in epoch 1 only: their mean is 0.5.
    expect(report.metrics).toEqual([
      { scorer: "exact", mean: (20 + 10 * 0.5) / 30, stderr: expect.any(Number), samples: 30 },
    ]);
    expect(report.counts).toEqual({ total: 60, scored: 60, errored: 0, remaining: 0, limited: 0 });
    expect(report.usage.spentNow).toMatchObject({ attempts: 60, inputTokens: 600 });
    expect(report.usage.reused.attempts).toBe(0);
  });

  it("keeps the pool full: a slot is refilled the moment its sample finishes", async () => {
    let active = 0;
    let peak = 0;
    let finished = 0;
    let finishedWhileSlowRan = -1;
    // The slow sample holds its slot until the other 39 are done (or 10 s pass): only a pool that
    // refills the three free slots at once gets them all through meanwhile; one that advanced in
    // waves of 4 would stall behind it with 3 done.
    let othersDone!: () => void;
    const allOthers = new Promise<void>((resolve) => (othersDone = resolve));
    const solver: SolverFn = async (sample) => {
      active++;
      peak = Math.max(peak, active);
      if (sample.id === "q000") {
        await Promise.race([allOthers, new Promise((r) => setTimeout(r, 10_000))]);
        finishedWhileSlowRan = finished;
      } else {
        await new Promise((r) => setTimeout(r, 1));
        if (++finished === 39) othersDone();
      }
      active--;
      return "x";
    };
    const ev = { ...countingEval(records(40)).ev, solver, epochs: 1, concurrency: 4 };
    await runEval({ store: store(), eval: ev });
    expect(peak).toBe(4);
    expect(finishedWhileSlowRan).toBe(39);
  });
});

describe("resumeRun", () => {
  it("makes no solver or scorer call for a complete run and reports the same metrics", async () => {
    const s = store();
    const first = countingEval(records(12));
    const done = await runEval({ store: s, eval: first.ev });
    const again = countingEval(records(12));
    const before = await s.reads.listAttempts(done.runId);
    const report = await resumeRun({ store: s, runId: done.runId, eval: again.ev });
    expect(again.calls.size).toBe(0);
    expect(again.scorerCalls()).toBe(0);
    expect(report.metrics).toEqual(done.metrics);
    expect(report.counts).toEqual(done.counts);
    expect(report.usage.spentNow.attempts).toBe(0);
    // Nothing was left to do, so nothing was "reused": the run's spend is its own (guarantee 5's
    // reused figure counts what an invocation with work to do did not buy again).
    expect(report.usage.reused.attempts).toBe(0);
    expect(report.usage.totalSpent).toEqual(done.usage.totalSpent);
    expect(await s.reads.listAttempts(done.runId)).toEqual(before);
  });

  it("executes only the missing keys after an interruption and matches an uninterrupted run exactly", async () => {
    const reference = await runEval({ store: store(), eval: countingEval(records(40)).ev });

    const s = store();
    const first = countingEval(records(40));
    const stop = new AbortController();
    let committed = 0;
    const partial = await runEval({
      store: s,
      eval: first.ev,
      signal: stop.signal,
      graceMs: 5_000,
      onEvent: (e) => {
        if (e.type === "attempt-committed" && ++committed === 25) stop.abort();
      },
    });
    expect(partial.status).toBe("interrupted");
    const stored = await s.reads.listAttempts(partial.runId);
    expect(stored.length).toBeGreaterThanOrEqual(25);
    expect(stored.length).toBeLessThan(80);

    const second = countingEval(records(40));
    const events: RunEvent[] = [];
    const resumed = await resumeRun({
      store: s,
      runId: partial.runId,
      eval: second.ev,
      onEvent: (e) => events.push(e),
    });
    expect(second.calls.size).toBe(80 - stored.length);
    for (const a of stored) expect(second.calls.has(`${a.sampleId}#${a.epoch}`)).toBe(false);
    expect(events[0]).toMatchObject({
      type: "run-started",
      resumed: true,
      plan: { preserved: stored.length, toExecute: 80 - stored.length },
    });
    expect(resumed.status).toBe("completed");
    expect(resumed.metrics).toEqual(reference.metrics);
    expect(resumed.counts).toEqual(reference.counts);
    expect(resumed.usage.totalSpent).toEqual(reference.usage.totalSpent);
    expect(resumed.usage.spentNow.attempts + resumed.usage.reused.attempts).toBe(80);
    const after = await s.reads.listAttempts(partial.runId);
    expect(
      after.filter((a) => stored.some((b) => b.sampleId === a.sampleId && b.epoch === a.epoch)),
    ).toEqual(stored);
  });

  it("types solver errors, timeouts and scorer errors; resume re-runs the first two and re-scores the third", async () => {
    const s = store();
    let fail = true;
    const samples = records(3);
    const solved: string[] = [];
    const solver: SolverFn = async (sample, ctx) => {
      solved.push(sample.id);
      if (fail && sample.id === "q000") throw new Error("boom");
      if (fail && sample.id === "q001") await new Promise((r) => setTimeout(r, 5_000, ctx));
      return String(sample.target);
    };
    const scorer: Scorer = {
      name: "exact",
      score: ({ sample, output }) => {
        if (fail && sample.id === "q002") throw new Error("scorer broke");
        return output === sample.target;
      },
    };
    const ev: EngineEval = {
      name: "errors",
      samples,
      solver,
      scorers: [scorer],
      epochs: 1,
      reducer: "mean",
      concurrency: 3,
      retries: 0,
      timeoutMs: 200,
    };
    const report = await runEval({ store: s, eval: ev });
    expect(report.status).toBe("errored");
    expect(report.errorsByType).toEqual({ solver: 1, timeout: 1, scorer: 1 });
    const errors = await s.reads.listAttempts(report.runId);
    expect(errors.map((a) => a.error)).toEqual([
      { type: "solver", message: "boom" },
      { type: "timeout", message: "timed out after 200 ms" },
      { type: "scorer", scorer: "exact", message: "scorer broke" },
    ]);

    fail = false;
    solved.length = 0;
    const resumed = await resumeRun({ store: s, runId: report.runId, eval: ev });
    expect(resumed).toMatchObject({
      status: "completed",
      plan: { errored: 2, toRescore: 1, preserved: 0 },
      executed: 2,
      rescored: 1,
    });
    // The scorer error's output stood: its solver was not called again.
    expect(solved.sort()).toEqual(["q000", "q001"]);
    const history = await s.reads.listAttempts(report.runId);
    expect(history.map((a) => `${a.sampleId}:${a.attempt}:${a.status}`)).toEqual([
      "q000:1:error",
      "q000:2:scored",
      "q001:1:error",
      "q001:2:scored",
      "q002:1:scored",
    ]);
    expect(await s.reads.listScorings(report.runId)).toMatchObject([
      { sampleId: "q002", attempt: 1, scoring: 1, status: "scored", rescored: ["exact"] },
    ]);
  });

  it("retries an errored key within the run when retries > 0", async () => {
    const s = store();
    let calls = 0;
    const solver: SolverFn = () => {
      calls++;
      if (calls === 1) throw new Error("flaky");
      return "ok";
    };
    const report = await runEval({
      store: s,
      eval: { ...countingEval(records(1)).ev, solver, epochs: 1, retries: 2, scorers: [] },
    });
    expect(report.status).toBe("completed");
    expect((await s.reads.listAttempts(report.runId)).map((a) => a.status)).toEqual([
      "error",
      "scored",
    ]);
  });

  it("refuses a changed sample, then re-runs only its keys with --rerun-changed", async () => {
    const s = store();
    const done = await runEval({ store: s, eval: countingEval(records(5)).ev });
    const changed = records(5, (x) => (x.id === "q003" ? { ...x, target: "changed" } : x));
    await expect(
      resumeRun({ store: s, runId: done.runId, eval: countingEval(changed).ev }),
    ).rejects.toMatchObject({
      code: "E_CHANGED_SAMPLES",
      details: { plan: { changed: ["q003"] } },
    });
    expect(await s.reads.listAttempts(done.runId)).toHaveLength(10);

    const rerun = countingEval(changed);
    const report = await resumeRun({
      store: s,
      runId: done.runId,
      eval: rerun.ev,
      rerunChanged: true,
    });
    expect([...rerun.calls.keys()].sort()).toEqual(["q003#1", "q003#2"]);
    expect(report.counts).toMatchObject({ scored: 10, remaining: 0 });
    expect(
      (await s.reads.getSamples(done.runId)).find((r) => r.sample.id === "q003")?.sample.target,
    ).toBe("changed");
  });

  it("calls a run complete when the stop signal arrives after its last commit", async () => {
    const stop = new AbortController();
    let committed = 0;
    const report = await runEval({
      store: store(),
      eval: countingEval(records(4)).ev,
      signal: stop.signal,
      onEvent: (e) => {
        if (e.type === "attempt-committed" && ++committed === 8) stop.abort();
      },
    });
    expect(report.status).toBe("completed");
  });

  it("settles a run whose status lags its attempts (all scored, marked interrupted) as completed", async () => {
    const s = store();
    const done = await runEval({ store: s, eval: countingEval(records(3)).ev });
    const owner = { host: "h", pid: 1, token: "t" };
    expect(await s.runs.claim(done.runId, owner, null)).toBe(true);
    expect(
      await s.runs.release(done.runId, "t", "interrupted", "killed after its last commit"),
    ).toBe(true);
    const again = countingEval(records(3));
    const report = await resumeRun({ store: s, runId: done.runId, eval: again.ev });
    expect(again.calls.size).toBe(0);
    expect(report.status).toBe("completed");
    expect((await s.runs.get(done.runId))?.status).toBe("completed");
  });

  it("resumes with the run's recorded configuration, not the eval's current defaults", async () => {
    const s = store();
    const stop = new AbortController();
    let committed = 0;
    const partial = await runEval({
      store: s,
      eval: { ...countingEval(records(6)).ev, epochs: 3, retries: 1 },
      signal: stop.signal,
      onEvent: (e) => {
        if (e.type === "attempt-committed" && ++committed === 4) stop.abort();
      },
    });
    expect(partial.status).toBe("interrupted");
    const now = countingEval(records(6), { epochs: 1, retries: 0, concurrency: 1 });
    const report = await resumeRun({ store: s, runId: partial.runId, eval: now.ev });
    expect(report.counts).toMatchObject({ total: 18, scored: 18, remaining: 0 });
    expect([...now.calls.keys()].some((k) => k.endsWith("#3"))).toBe(true);
  });

  it("answers an unknown run id with E_RUN_NOT_FOUND", async () => {
    await expect(
      resumeRun({ store: store(), runId: "r_nope", eval: countingEval([]).ev }),
    ).rejects.toMatchObject({
      code: "E_RUN_NOT_FOUND",
    });
  });
});

describe("ownership and durability", () => {
  it("stops a run whose ownership was taken over and rejects its late writes", async () => {
    const s = store();
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const solver: SolverFn = async (sample) => {
      if (sample.id !== "q000") await gate;
      return "x";
    };
    let runId = "";
    const running = runEval({
      store: s,
      eval: { ...countingEval(records(6)).ev, solver, epochs: 1, concurrency: 2 },
      heartbeatMs: 20,
      onEvent: (e) => {
        if (e.type === "run-started") runId = e.runId;
      },
    });
    await until(() => runId !== "", "the run to start");
    const run = await s.runs.get(runId);
    // Another process judged the owner dead and won the compare-and-set on its token.
    expect(
      await s.runs.claim(runId, { host: "elsewhere", pid: 1, token: "thief" }, run!.owner!.token),
    ).toBe(true);
    release();
    await expect(running).rejects.toMatchObject({ code: "E_FENCED" });
    expect((await s.runs.get(runId))?.owner?.token).toBe("thief");
    expect((await s.reads.listAttempts(runId)).length).toBeLessThanOrEqual(1);
  });

  it("stops dispatching when the store stays unwritable and keeps the attempts in a fallback file", async () => {
    const s = store();
    let failing = false;
    const flaky: Store = {
      ...s,
      attempts: {
        ...s.attempts,
        record: (...args) =>
          failing ? Promise.reject(new Error("disk I/O error")) : s.attempts.record(...args),
      },
    };
    let solverCalls = 0;
    const solver: SolverFn = async () => {
      if (++solverCalls === 5) failing = true;
      await new Promise((r) => setTimeout(r, 2));
      return "x";
    };
    const events: RunEvent[] = [];
    const attempt = runEval({
      store: flaky,
      eval: { ...countingEval(records(50)).ev, solver, epochs: 1, concurrency: 2 },
      storeRetryDelaysMs: [1, 1, 1],
      onEvent: (e) => events.push(e),
    });
    const error = await attempt.catch((e: unknown) => e);
    expect(error).toMatchObject({ code: "E_STORE_UNWRITABLE" });
    const fallbackPath = (error as { details: { fallbackPath: string } }).details.fallbackPath;
    const { readFileSync } = await import("node:fs");
    const lines = readFileSync(fallbackPath, "utf8")
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l));
    const stored = await s.reads.listAttempts(lines[0].runId);
    expect(stored.length + lines.length).toBeLessThanOrEqual(solverCalls);
    expect(solverCalls).toBeLessThan(12); // stopped dispatching: not 50
    expect(events.filter((e) => e.type === "store-retry").length).toBeGreaterThanOrEqual(3);
    expect((await s.runs.get(lines[0].runId))?.status).toBe("interrupted");
  });
});
