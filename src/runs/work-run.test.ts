import { afterEach, describe, expect, it } from "vitest";
import { tempStore } from "../../test/helpers/temp-store.js";
import { until } from "../../test/helpers/wait.js";
import type { EngineEval, SolverFn } from "../core/eval.js";
import type { Progress, RunEvent } from "../core/events.js";
import { fingerprintSample } from "../core/fingerprint.js";
import type { SampleRecord } from "../core/types.js";
import { openSqliteStore } from "../store/sqlite/index.js";
import { requireLeases, type Store } from "../store/types.js";
import { cancelRun } from "./cancel-run.js";
import { planResume } from "./resume-run.js";
import { startDistributed } from "./start-run.js";
import { leaseTime, workRun } from "./work-run.js";

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

/** A SQLite store file and a way to open more connections to it (one per "process"). */
function storeFile(): { store: Store; connect: () => Store } {
  const t = tempStore();
  cleanups.push(t.cleanup);
  return {
    store: t.store,
    connect: () => {
      const store = openSqliteStore(t.path);
      cleanups.push(() => store.close());
      return store;
    },
  };
}

const records = (n: number): SampleRecord[] =>
  Array.from({ length: n }, (_, i) => {
    const sample = { id: `q${String(i).padStart(3, "0")}`, input: i, target: "ok" };
    return { sample, fingerprint: fingerprintSample(sample) };
  });

/**
 * An eval whose solver counts its calls per sample id and takes `delayMs`, after `gate` (when
 * given) has opened.
 */
function countingEval(
  n: number,
  options: {
    delayMs?: number;
    fail?: (input: number) => boolean;
    costUsd?: number;
    gate?: Promise<unknown>;
  } = {},
) {
  const calls = new Map<string, number>();
  const solver: SolverFn = async (sample, ctx) => {
    calls.set(sample.id, (calls.get(sample.id) ?? 0) + 1);
    await options.gate;
    await new Promise((resolve, reject) => {
      const timer = setTimeout(resolve, options.delayMs ?? 5);
      ctx.signal.addEventListener("abort", () => {
        clearTimeout(timer);
        reject(new Error("aborted"));
      });
    });
    if (options.fail?.(Number(sample.input))) throw new Error(`sample ${sample.id} fails`);
    const usage =
      options.costUsd === undefined
        ? undefined
        : { inputTokens: 1, outputTokens: 1, costUsd: options.costUsd };
    return usage ? { output: "ok", usage } : "ok";
  };
  const ev: EngineEval = {
    name: "dist",
    samples: records(n),
    solver,
    scorers: [{ name: "exact", score: ({ output }) => output === "ok" }],
    epochs: 1,
    reducer: "mean",
    concurrency: 4,
    retries: 0,
  };
  const requested = () => [...calls.values()].reduce((a, b) => a + b, 0);
  return { ev, calls, requested };
}

/**
 * A gate that opens once `count` calls of `arrive` have come: e.g. the solvers wait until every
 * worker has joined, so each has keys to execute however slowly it starts on a loaded machine.
 */
function gate(count: number): { opened: Promise<void>; arrive: () => void } {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  let arrived = 0;
  return { opened, arrive: () => (++arrived >= count ? open() : undefined) };
}

/** Starts a distributed run and resolves its id once its first key committed. */
function startWithId(options: Parameters<typeof startDistributed>[0]) {
  let resolveId!: (id: string) => void;
  const id = new Promise<string>((resolve) => (resolveId = resolve));
  const report = startDistributed({
    ...options,
    onEvent: (event) => {
      if (event.type === "run-started") resolveId(event.runId);
      options.onEvent?.(event);
    },
  });
  return { id, report };
}

describe("distributed runs: workers over per-key leases", () => {
  it("refuses a store without leases before anything is recorded or executed", async () => {
    const { store } = storeFile();
    const noLeases: Store = { ...store, leases: undefined };
    const { ev, requested } = countingEval(3);
    const refusal = {
      code: "E_CONFIG",
      message: expect.stringMatching(/^store .+ cannot hold distributed runs .*--distributed/),
    };
    await expect(startDistributed({ store: noLeases, eval: ev })).rejects.toMatchObject(refusal);
    expect(await store.reads.listRuns()).toEqual([]);
    // A worker (or a resume) of an existing distributed run is refused the same way.
    const started = startWithId({ store, eval: ev });
    const runId = await started.id;
    await started.report;
    await expect(workRun({ store: noLeases, runId, eval: ev })).rejects.toMatchObject(refusal);
    expect(requested()).toBe(3);
  });

  it("three workers execute every key once; the run completes when the last key has its outcome", async () => {
    const { store, connect } = storeFile();
    const joined = gate(3);
    const { ev, calls, requested } = countingEval(120, { delayMs: 10, gate: joined.opened });
    const seen: Progress[] = [];
    const started = startWithId({
      store,
      eval: ev,
      onJoined: joined.arrive,
      onEvent: (event) => (event.type === "attempt-committed" ? seen.push(event.progress) : 0),
    });
    const runId = await started.id;
    const workers = [1, 2].map(() =>
      workRun({ store: connect(), runId, eval: ev, onJoined: joined.arrive }),
    );
    const [creator, ...others] = await Promise.all([started.report, ...workers]);

    expect(creator.status).toBe("completed");
    for (const report of others) expect(["completed", "running"]).toContain(report.status);
    expect(requested()).toBe(120);
    expect([...calls.values()].every((n) => n === 1)).toBe(true);
    const attempts = await store.reads.listAttemptHeads(runId);
    expect(attempts).toHaveLength(120);
    expect((await store.runs.get(runId))?.status).toBe("completed");
    const listed = await requireLeases(store).list(runId);
    expect(listed.map((w) => w.state)).toEqual(["finished", "finished", "finished"]);
    // The work was shared: each worker executed some of the keys.
    expect(listed.every((w) => w.keysDone > 0)).toBe(true);
    expect(listed.reduce((sum, w) => sum + w.keysDone, 0)).toBe(120);
    // Its progress counted the others' outcomes too (as seen at its claims), never past the total.
    const last = seen.at(-1)!;
    expect(last.others).toBeGreaterThan(0);
    expect(last.done + last.errored + last.others!).toBeLessThanOrEqual(120);
    expect(seen.every((p, i) => i === 0 || p.others! >= seen[i - 1]!.others!)).toBe(true);
    // Each worker's report tells its own spend from the others' (bought meanwhile, not reused).
    for (const report of [creator, ...others]) {
      expect(report.usage.reused.attempts).toBe(0);
      expect(report.executed + report.usage.byOtherWorkers!.attempts).toBe(120);
    }
  });

  it("settles errored keys: the run ends errored, and a resume re-executes only those", async () => {
    const { store, connect } = storeFile();
    let failing = true;
    const { ev, calls } = countingEval(30, { fail: (i) => failing && i % 10 === 0 });
    const report = await startDistributed({ store, eval: ev });
    expect(report.status).toBe("errored");
    expect(report.counts).toMatchObject({ scored: 27, errored: 3, remaining: 3 });

    failing = false;
    calls.clear();
    const resumed = await workRun({
      store: connect(),
      runId: report.runId,
      eval: ev,
      reopen: true,
    });
    expect(resumed.status).toBe("completed");
    expect([...calls.keys()].sort()).toEqual(["q000", "q010", "q020"]);
  });

  it("a worker whose leases expired (no heartbeat) is fenced: its late commits are refused, nothing of it stored", async () => {
    const { store, connect } = storeFile();
    // The slow worker's solver takes 600 ms while its lease lives 200 ms and it never beats.
    const slow = countingEval(4, { delayMs: 600 });
    const fast = countingEval(4, { delayMs: 1 });
    const frozen = startWithId({ store, eval: slow.ev, leaseMs: 200, heartbeatMs: 60_000 });
    const runId = await frozen.id;
    await new Promise((resolve) => setTimeout(resolve, 300));
    const taker = await workRun({ store: connect(), runId, eval: fast.ev });
    await expect(frozen.report).rejects.toMatchObject({
      code: "E_FENCED",
      message: expect.stringMatching(
        /lost its leases on run .*nothing it computed after that is stored/,
      ),
    });
    expect(taker.status).toBe("completed");
    const attempts = await store.reads.listAttemptHeads(runId);
    expect(attempts).toHaveLength(4);
    const workers = await requireLeases(store).list(runId);
    const lost = workers.find((w) => w.state === "lost");
    expect(lost?.rejected).toBeGreaterThan(0);
    expect(lost?.keysDone).toBe(0);
  });

  it("a worker replays the open journal of keys it takes over from a worker presumed dead", async () => {
    const { store, connect } = storeFile();
    const toolRuns = new Map<string, number>();
    let stall = true;
    const takerJoined = gate(1);
    const takerDone = gate(1);
    const solver: SolverFn = async (sample, ctx) => {
      const first = stall;
      await ctx.step("tool", { id: sample.id }, async () => {
        toolRuns.set(sample.id, (toolRuns.get(sample.id) ?? 0) + 1);
        // The first worker's steps are journaled only once the taker is at work (it has read
        // whatever it reads at its start); then that worker stalls until the taker is done.
        if (first) await takerJoined.opened;
        return `ran ${sample.id}`;
      });
      if (first) await takerDone.opened;
      return "ok";
    };
    const ev: EngineEval = { ...countingEval(4).ev, solver };
    // Leases and heartbeats of a minute: nothing expires by the clock, however loaded the
    // machine; the first worker is presumed dead when the test says so (expireWorker, what a
    // worker whose pid is gone gets).
    const frozen = startWithId({ store, eval: ev, leaseMs: 60_000, heartbeatMs: 60_000 });
    const runId = await frozen.id;
    while (toolRuns.size < 4) await new Promise((resolve) => setTimeout(resolve, 5));
    const [first] = await requireLeases(store).list(runId);

    // The taker joins while the first worker holds every key: nothing to claim yet.
    const taker = workRun({
      store: connect(),
      runId,
      eval: ev,
      onJoined: (j) => {
        expect(j.firstClaimKeys).toBe(0);
        stall = false;
        takerJoined.arrive();
      },
    });
    await until(
      async () => (await store.journal.list(runId, { attempt: "open" })).length === 4,
      "the first worker's 4 steps journaled",
    );
    expect(await requireLeases(store).expire(runId, first!.token)).toBe(4);
    const report = await taker;
    takerDone.arrive();
    expect(report.status).toBe("completed");
    expect(report.journal?.replayed).toBe(4);
    // Each tool ran once: the taker got its result from the journal.
    expect([...toolRuns.values()]).toEqual([1, 1, 1, 1]);
    await expect(frozen.report).rejects.toMatchObject({ code: "E_FENCED" });
    expect(await store.reads.listAttemptHeads(runId)).toHaveLength(4);
  });

  it("stet cancel stops every worker; the last to leave interrupts the run, a resume finishes it", async () => {
    const { store, connect } = storeFile();
    // The solvers wait until both workers have seen the cancel (at a heartbeat): the run cannot
    // finish first, however the machine schedules them.
    const joined = gate(2);
    const stopping = gate(2);
    const { ev, calls, requested } = countingEval(200, { delayMs: 20, gate: stopping.opened });
    const onEvent = (event: RunEvent) =>
      event.type === "stopping" && event.reason === "cancel" ? stopping.arrive() : undefined;
    const started = startWithId({
      store,
      eval: ev,
      heartbeatMs: 50,
      onJoined: joined.arrive,
      onEvent,
    });
    const runId = await started.id;
    const other = workRun({
      store: connect(),
      runId,
      eval: ev,
      heartbeatMs: 50,
      onJoined: joined.arrive,
      onEvent,
    });
    await joined.opened;
    const cancelled = await cancelRun({ store: connect(), runId });
    expect(cancelled).toMatchObject({ status: "requested" });
    const reports = await Promise.all([started.report, other]);
    expect(await store.runs.get(runId)).toMatchObject({ status: "interrupted" });
    for (const report of reports) expect(report.stopped?.reason).toBe("cancel");
    expect((await requireLeases(store).list(runId)).map((w) => w.state)).toEqual([
      "stopped",
      "stopped",
    ]);
    const before = requested();
    expect(before).toBeLessThan(200);

    const resumed = await workRun({ store: connect(), runId, eval: ev, reopen: true });
    expect(resumed.status).toBe("completed");
    expect(requested()).toBe(200);
    expect([...calls.values()].every((n) => n === 1)).toBe(true);
  });

  it("counts the spend cap over every worker", async () => {
    const { store, connect } = storeFile();
    // Nothing is spent before all three have joined: a worker slow to start is not left out.
    const joined = gate(3);
    const { ev, requested } = countingEval(400, {
      delayMs: 5,
      costUsd: 0.01,
      gate: joined.opened,
    });
    const capped = { ...ev, maxCost: 1 };
    const started = startWithId({ store, eval: capped, onJoined: joined.arrive });
    const runId = await started.id;
    const others = [1, 2].map(() =>
      workRun({ store: connect(), runId, eval: capped, onJoined: joined.arrive }),
    );
    const reports = await Promise.all([started.report, ...others]);
    expect(reports.map((r) => r.stopped?.reason)).toEqual(["budget", "budget", "budget"]);
    const spent = (await store.reads.listAttemptHeads(runId)).reduce(
      (sum, a) => sum + (a.usage?.costUsd ?? 0),
      0,
    );
    // Every worker stops once the run's spend, all workers', reaches the cap; what overshoots it
    // is at most what the three workers had in flight (4 each): each looks at the others' spend
    // before every dispatch. (Counted alone, each worker would spend up to the cap: 3 in all.)
    expect(spent).toBeGreaterThanOrEqual(0.9);
    expect(spent).toBeLessThanOrEqual(1 + 3 * 4 * 0.01 + 1e-9);
    expect(requested()).toBeLessThan(400);
    expect((await store.runs.get(runId))?.status).toBe("interrupted");
  });

  it("refuses what a worker cannot join, and keeps single owners off a running distributed run", async () => {
    const { store } = storeFile();
    const { ev } = countingEval(3);
    const done = await startDistributed({ store, eval: ev });
    // A complete run: nothing to do, reported as it is.
    await expect(workRun({ store, runId: done.runId, eval: ev })).resolves.toMatchObject({
      status: "completed",
    });
    await expect(workRun({ store, runId: "nope", eval: ev })).rejects.toMatchObject({
      code: "E_RUN_NOT_FOUND",
    });

    // Its solvers wait until it has seen the cancel: the run cannot finish first.
    const stopping = gate(1);
    const slow = countingEval(40, { delayMs: 50, gate: stopping.opened });
    const started = startWithId({
      store,
      eval: slow.ev,
      heartbeatMs: 20,
      onEvent: (event) => (event.type === "stopping" ? stopping.arrive() : undefined),
    });
    const runId = await started.id;
    await cancelRun({ store, runId });
    await started.report;
    await expect(workRun({ store, runId, eval: slow.ev })).rejects.toMatchObject({
      code: "E_RUN_NOT_RUNNING",
      message: expect.stringContaining(`stet resume ${runId}`),
    });
    await requireLeases(store).reopen(runId);
    const planning = await planResume({ store, runId, eval: slow.ev });
    expect(planning).toMatchObject({ ok: false, refusal: { reason: "distributed" } });
    const owner = { host: "h", pid: 1, token: "t".repeat(24) };
    expect(await store.runs.claim(runId, owner, null)).toBe(false);
  });

  it("reads STET_LEASE_MS", () => {
    expect(leaseTime({})).toBe(30_000);
    expect(leaseTime({ STET_LEASE_MS: "1500" })).toBe(1_500);
    expect(() => leaseTime({ STET_LEASE_MS: "1e4" })).toThrow(/STET_LEASE_MS/);
    expect(() => leaseTime({ STET_LEASE_MS: "50" })).toThrow(
      /STET_LEASE_MS must be an integer from 100 to 86400000 ms/,
    );
  });
});
