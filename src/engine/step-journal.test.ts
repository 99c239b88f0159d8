import { describe, expect, it } from "vitest";
import type { EngineEval, ModelCaller, SolverFn } from "../core/eval.js";
import { fingerprintSample } from "../core/fingerprint.js";
import type { Sample, SampleRecord } from "../core/types.js";
import { resumeRun } from "../runs/resume-run.js";
import { runEval } from "../runs/start-run.js";
import type { Store } from "../store/types.js";
import { storesPerTest } from "../../test/helpers/temp-store.js";
import { notJson } from "./step-journal.js";

const store = storesPerTest();

const records = (n: number): SampleRecord[] =>
  Array.from({ length: n }, (_, i) => {
    const sample: Sample = { id: `s${i}`, input: `task ${i}` };
    return { sample, fingerprint: fingerprintSample(sample) };
  });

function engineEval(solver: SolverFn, overrides: Partial<EngineEval> = {}): EngineEval {
  return {
    name: "journal",
    samples: records(2),
    solver,
    scorers: [{ name: "ok", score: () => 1 }],
    epochs: 1,
    reducer: "mean",
    concurrency: 2,
    retries: 0,
    ...overrides,
  };
}

/**
 * Where an execution is when the run is aborted (as by SIGKILL): it never goes on, so nothing of
 * it after this point can be recorded, however long the run takes to stop.
 */
const killedHere = () => new Promise<never>(() => {});

/**
 * An agent of `steps` tool steps, each counted per sample; the run is aborted (as a SIGKILL
 * would end it: nothing in flight is recorded) once every sample has run `stopAfter` steps.
 */
function agent(steps: number, options: { stopAfter?: number; journal?: boolean } = {}) {
  const ran: string[] = [];
  const abort = new AbortController();
  let reached = 0;
  const solver: SolverFn = async (sample, ctx) => {
    let last = "";
    for (let i = 0; i < steps; i++) {
      if (options.stopAfter === i && ++reached === 2) abort.abort();
      if (options.stopAfter === i) await killedHere();
      last = await ctx.step(
        "tool",
        { i },
        () => {
          ran.push(`${sample.id}:${i}`);
          return `${sample.id} did ${i}`;
        },
        options.journal === undefined ? undefined : { journal: options.journal },
      );
    }
    return last;
  };
  return { solver, ran, abort };
}

async function interrupted(s: Store, ev: EngineEval, abort: AbortController): Promise<string> {
  const report = await runEval({ store: s, eval: ev, abortSignal: abort.signal });
  expect(report.status).toBe("interrupted");
  return report.runId;
}

describe("ctx.step", () => {
  it("replays an interrupted execution's steps on resume and runs only the rest", async () => {
    const s = store();
    const first = agent(5, { stopAfter: 3 });
    const runId = await interrupted(s, engineEval(first.solver), first.abort);
    expect(first.ran.sort()).toEqual(["s0:0", "s0:1", "s0:2", "s1:0", "s1:1", "s1:2"]);
    expect(await s.journal.keys(runId)).toEqual([
      { sampleId: "s0", epoch: 1 },
      { sampleId: "s1", epoch: 1 },
    ]);

    const second = agent(5);
    const report = await resumeRun({ store: s, runId, eval: engineEval(second.solver) });
    expect(report.status).toBe("completed");
    expect(second.ran.sort()).toEqual(["s0:3", "s0:4", "s1:3", "s1:4"]);
    const attempts = await s.reads.listAttempts(runId);
    expect(attempts.map((a) => a.output)).toEqual(["s0 did 4", "s1 did 4"]);
    const journal = await s.journal.list(runId, { sampleId: "s0", attempt: 1 });
    expect(journal.map((e) => [e.step, e.name, e.result])).toEqual(
      [0, 1, 2, 3, 4].map((i) => [i, "tool", `s0 did ${i}`]),
    );
  });

  it("drops the entries a resumed execution never reached: its trajectory is what it did", async () => {
    const s = store();
    const first = agent(5, { stopAfter: 3 });
    const runId = await interrupted(s, engineEval(first.solver), first.abort);
    // Resumed, the agent finishes after 2 steps: entry 2 (of the old path) is not its trajectory.
    const second = agent(2);
    const report = await resumeRun({ store: s, runId, eval: engineEval(second.solver) });
    expect(second.ran).toEqual([]);
    expect(report.journal).toMatchObject({ replayed: 4, diverged: 2 });
    const journal = await s.journal.list(runId, { sampleId: "s0" });
    expect(journal.map((e) => [e.attempt, e.step])).toEqual([
      [1, 0],
      [1, 1],
    ]);
  });

  it("with journal: false on the eval, records nothing and a resume starts the samples again", async () => {
    const s = store();
    const first = agent(4, { stopAfter: 2 });
    const off = (solver: SolverFn) => Object.assign(solver, { journal: false });
    const runId = await interrupted(s, engineEval(off(first.solver)), first.abort);
    expect(await s.journal.list(runId)).toEqual([]);
    const second = agent(4);
    await resumeRun({ store: s, runId, eval: engineEval(off(second.solver)) });
    expect(second.ran).toHaveLength(8);
    expect(await s.journal.list(runId)).toEqual([]);
  });

  it("with { journal: false } on a call, runs it unjournaled", async () => {
    const s = store();
    const first = agent(4, { stopAfter: 2, journal: false });
    const runId = await interrupted(s, engineEval(first.solver), first.abort);
    expect(await s.journal.list(runId)).toEqual([]);
    const second = agent(4, { journal: false });
    await resumeRun({ store: s, runId, eval: engineEval(second.solver) });
    expect(second.ran).toHaveLength(8);
  });

  it("refuses an entry over the size limit with a solver error naming the step", async () => {
    const s = store();
    const solver: SolverFn = async (_sample, ctx) =>
      ctx.step("fetch-page", { url: "x" }, () => "x".repeat(1_000_001));
    const report = await runEval({ store: s, eval: engineEval(solver) });
    const [attempt] = await s.reads.listAttempts(report.runId);
    expect(attempt!.error).toMatchObject({ type: "solver" });
    expect(attempt!.error!.message).toMatch(/step "fetch-page".*over the 1000000-byte limit/);
    expect(await s.journal.list(report.runId)).toEqual([]);
  });

  it.each([
    ["a function", () => () => 1, /\$ is a function/],
    ["NaN", () => ({ n: Number.NaN }), /\$\.n is NaN/],
    ["a Date", () => [new Date(0)], /\$\[0\] is a Date/],
  ])("refuses a non-JSON result (%s) with a solver error naming the step", async (_, fn, why) => {
    const s = store();
    const solver: SolverFn = async (_sample, ctx) => {
      await ctx.step("parse", { n: 1 }, fn as () => never);
      return "unreachable";
    };
    const report = await runEval({ store: s, eval: engineEval(solver) });
    const [attempt] = await s.reads.listAttempts(report.runId);
    expect(attempt!.error).toMatchObject({ type: "solver" });
    expect(attempt!.error!.message).toMatch(/the result of step "parse" is not JSON/);
    expect(attempt!.error!.message).toMatch(why);
  });

  it("journals a step that threw and rethrows it, typed, on replay without calling fn", async () => {
    const s = store();
    const abort = new AbortController();
    let calls = 0;
    let aborted = 0;
    const make =
      (stop: boolean): SolverFn =>
      async (_sample, ctx) => {
        let caught = "";
        try {
          await ctx.step("flaky", {}, () => {
            calls++;
            throw Object.assign(new Error("tool said 503"), { type: "provider", status: 503 });
          });
        } catch (error) {
          caught = `${(error as Error).message} ${(error as { status?: number }).status}`;
        }
        if (stop) {
          if (++aborted === 2) abort.abort();
          await killedHere();
        }
        return caught;
      };
    const runId = await interrupted(s, engineEval(make(true)), abort);
    expect(calls).toBe(2);
    await resumeRun({ store: s, runId, eval: engineEval(make(false)) });
    expect(calls).toBe(2);
    const attempts = await s.reads.listAttempts(runId);
    expect(attempts.map((a) => a.output)).toEqual(["tool said 503 503", "tool said 503 503"]);
    const [entry] = await s.journal.list(runId, { sampleId: "s0" });
    expect(entry).toMatchObject({ result: null, error: { message: "tool said 503", status: 503 } });
  });

  it("counts a replayed chat call's usage in the attempt's, marked reused", async () => {
    const s = store();
    const abort = new AbortController();
    let requests = 0;
    const callModel: ModelCaller = async (call) => {
      requests++;
      const last = call.messages.at(-1)!.content as string;
      return { content: `re: ${last}`, model: "m", usage: { inputTokens: 10, outputTokens: 5 } };
    };
    let reached = 0;
    const make =
      (stop: boolean): SolverFn =>
      async (sample, ctx) => {
        const a = await ctx.chat({
          messages: [{ role: "user", content: `${sample.id} one` }],
          apiKey: "sk-never-journaled",
          headers: { "x-secret": "h-never-journaled" },
        });
        if (stop) {
          if (++reached === 2) abort.abort();
          await killedHere();
        }
        const b = await ctx.chat({ messages: [{ role: "user", content: a.content }] });
        return b.content;
      };
    const runId = await interrupted(s, engineEval(make(true), { callModel }), abort);
    expect(requests).toBe(2);
    await resumeRun({ store: s, runId, eval: engineEval(make(false), { callModel }) });
    expect(requests).toBe(4);
    const attempts = await s.reads.listAttempts(runId);
    expect(attempts.map((a) => a.output)).toEqual(["re: re: s0 one", "re: re: s1 one"]);
    // The attempt's usage is its whole trajectory: the call made now and the replayed one,
    // marked reused (the interrupted execution paid for it).
    const trajectory = {
      inputTokens: 20,
      outputTokens: 10,
      reused: { inputTokens: 10, outputTokens: 5 },
    };
    expect(attempts.map((a) => a.usage)).toEqual([trajectory, trajectory]);
    const journal = await s.journal.list(runId, { sampleId: "s0" });
    expect(journal.map((e) => [e.kind, e.usage?.inputTokens])).toEqual([
      ["chat", 10],
      ["chat", 10],
    ]);
    expect(journal[0]!.input).toEqual({
      model: null,
      messages: [{ role: "user", content: "s0 one" }],
    });
    expect(JSON.stringify(journal)).not.toMatch(/never-journaled/);
  });

  it("after a takeover, the old owner's next step is rejected by the fence and adds no entry", async () => {
    const s = store();
    let thiefToken = "";
    let ranAfterTakeover = 0;
    let takeover!: () => void;
    const takenOver = new Promise<void>((resolve) => (takeover = resolve));
    let bothBefore!: () => void;
    const beforeDone = new Promise<void>((resolve) => (bothBefore = resolve));
    let before = 0;
    const solver: SolverFn = async (sample, ctx) => {
      await ctx.step("before", {}, () => "fine");
      if (++before === 2) bothBefore();
      if (sample.id === "s0") {
        await beforeDone;
        // Another process takes the run over (as after a freeze): a compare-and-set on the token.
        const run = (await s.runs.get(ctx.runId))!;
        thiefToken = `thief-${Math.random()}`;
        const thief = { host: "other-host", pid: 1, token: thiefToken };
        expect(await s.runs.claim(ctx.runId, thief, run.owner!.token)).toBe(true);
        takeover();
      } else {
        await takenOver;
      }
      await ctx.step("after", {}, () => {
        ranAfterTakeover++;
        return "too late";
      });
      return "done";
    };
    const ev = engineEval(solver);
    await expect(runEval({ store: s, eval: ev, heartbeatMs: 60_000 })).rejects.toMatchObject({
      code: "E_FENCED",
    });
    const [run] = await s.reads.listRuns();
    const entries = await s.journal.list(run!.run.id);
    // Only the steps written before the takeover; the old owner's later ones were refused.
    expect(entries.map((e) => e.name)).toEqual(["before", "before"]);
    expect(await s.reads.listAttempts(run!.run.id)).toEqual([]);
    expect(thiefToken).not.toBe("");
    expect(ranAfterTakeover).toBeLessThanOrEqual(2);
  });
});

describe("ctx.chatStep with { last: true }", () => {
  /**
   * A run of `n` samples whose solver sends one chat step, counting the store's journal and
   * attempt commits, and whether the step's entry was durable when the solver went on.
   */
  async function chatRun(n: number, last: boolean) {
    const s = store();
    const commits = { recordSteps: 0, recordAttempts: 0, attemptsWithSteps: 0 };
    const counted: Store = {
      ...s,
      journal: {
        ...s.journal,
        record: (...args) => {
          commits.recordSteps++;
          return s.journal.record(...args);
        },
      },
      attempts: {
        ...s.attempts,
        record: (...args) => {
          commits.recordAttempts++;
          if ((args[3]?.steps?.drafts.length ?? 0) > 0) commits.attemptsWithSteps++;
          return s.attempts.record(...args);
        },
      },
    };
    const durableWhenSeen: number[] = [];
    const solver: SolverFn = async (sample, ctx) => {
      const request = { model: "m", messages: [{ role: "user", content: String(sample.input) }] };
      const send = async () => ({ content: `re ${sample.id}`, model: "m" });
      const { reply } = await ctx.chatStep!(request, send, { last });
      durableWhenSeen.push((await s.journal.list(ctx.runId, { sampleId: sample.id })).length);
      return reply.content;
    };
    const report = await runEval({
      store: counted,
      eval: engineEval(solver, { samples: records(n), concurrency: 1 }),
    });
    expect(report.status).toBe("completed");
    const entries = await s.journal.list(report.runId);
    return { commits, durableWhenSeen, entries };
  }

  it("hands the reply on before its entry is durable, which commits with the attempt", async () => {
    const { commits, durableWhenSeen, entries } = await chatRun(3, true);
    expect(durableWhenSeen).toEqual([0, 0, 0]);
    // One transaction per sample: the entry rides with its attempt, which binds it.
    expect(commits).toEqual({ recordSteps: 0, recordAttempts: 3, attemptsWithSteps: 3 });
    expect(entries.map((e) => [e.sampleId, e.attempt, e.kind])).toEqual([
      ["s0", 1, "chat"],
      ["s1", 1, "chat"],
      ["s2", 1, "chat"],
    ]);
  });

  it("without it, a chat step is durable before the solver goes on", async () => {
    const { commits, durableWhenSeen, entries } = await chatRun(3, false);
    expect(durableWhenSeen).toEqual([1, 1, 1]);
    expect(commits).toMatchObject({ recordSteps: 3, recordAttempts: 3, attemptsWithSteps: 0 });
    expect(entries.every((e) => e.attempt === 1)).toBe(true);
  });
});

describe("ctx.step with { behind: true }", () => {
  interface Gate {
    /** Lets the journal's commits through, 5 ms from now. */
    open: () => void;
    log: (event: string) => void;
  }

  /**
   * A one-sample run whose journal commits wait until the solver opens the gate: the events it
   * logs and the gate's opening, in order, and the entries committed.
   */
  async function gatedRun(solver: (ctx: Parameters<SolverFn>[1], gate: Gate) => Promise<string>) {
    const s = store();
    const events: string[] = [];
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const open = () =>
      void setTimeout(() => {
        events.push("commits let through");
        release();
      }, 5);
    const gated: Store = {
      ...s,
      journal: {
        ...s.journal,
        record: async (...args) => {
          await gate;
          return s.journal.record(...args);
        },
      },
    };
    const log = (event: string) => void events.push(event);
    const report = await runEval({
      store: gated,
      eval: engineEval((_sample, ctx) => solver(ctx, { open, log }), {
        samples: records(1),
        concurrency: 1,
      }),
    });
    expect(report.status).toBe("completed");
    const entries = await s.journal.list(report.runId);
    return { events, entries: entries.map((e) => [e.step, e.name]) };
  }

  it("returns while its entry commits; a model call goes out meanwhile and returns after it", async () => {
    const request = { model: "m", messages: [{ role: "user", content: "go" }] };
    const { events, entries } = await gatedRun(async (ctx, { open, log }) => {
      await ctx.step("tool", { i: 0 }, () => log("tool runs"), { behind: true });
      log("tool returned");
      const { reply } = await ctx.chatStep!(request, async () => {
        log("call sent");
        open();
        return { content: "done", model: "m" };
      });
      log("call returned");
      return reply.content;
    });
    expect(events).toEqual([
      "tool runs",
      "tool returned",
      "call sent",
      "commits let through",
      "call returned",
    ]);
    expect(entries).toEqual([
      [0, "tool"],
      [1, "chat"],
    ]);
  });

  it("the next step does not run until the entry is durable", async () => {
    const { events, entries } = await gatedRun(async (ctx, { open, log }) => {
      await ctx.step("a", {}, () => log("a runs"), { behind: true });
      log("a returned");
      open();
      await ctx.step("b", {}, () => log("b runs"));
      return "ok";
    });
    expect(events).toEqual(["a runs", "a returned", "commits let through", "b runs"]);
    expect(entries).toEqual([
      [0, "a"],
      [1, "b"],
    ]);
  });
});

describe("notJson", () => {
  const cycle: Record<string, unknown> = { a: 1 };
  cycle.self = { back: cycle };
  it.each([
    ["JSON", { a: [1, "x", null, { b: true }], u: undefined }, null],
    ["NaN at the top", NaN, "$ is NaN"],
    ["Infinity deep inside", { a: [1, { b: Infinity }] }, "$.a[1].b is Infinity"],
    ["a function in an array", [0, [1, () => 1]], "$[1][1] is a function"],
    ["a cycle", cycle, "$.self.back is a cycle"],
    ["a Date", { d: new Date(0) }, "$.d is a Date"],
    ["undefined in an array", { v: [undefined] }, "$.v[0] is a undefined"],
  ])("says where %s is", (_what, value, says) => {
    expect(notJson(value, new Set())).toBe(says);
  });
});
