import type pg from "pg";
import { onTestFinished, describe, expect, it } from "vitest";
import { runCli, startCli, type CliProcess, type CliResult } from "./helpers/cli.js";
import { evalProject, questions } from "./helpers/eval-project.js";
import { startMockOpenAI, type MockOpenAI, type MockRequest } from "./helpers/mock-openai.js";
import { SKIP_POSTGRES, testSchemaPool } from "./helpers/postgres.js";
import { stopped } from "./helpers/owner-stores.js";
import { until } from "./helpers/wait.js";

/**
 * Issue 16, sample-level workers: several real processes (`stet run --distributed` and
 * `stet worker`) share one run on PostgreSQL and a mock model that counts requests per sample.
 * Each request names the process that sent it (the eval adds its pid as a header) and the mock
 * echoes that pid in its reply, so the store's outputs say which process computed them.
 */
const CONCURRENCY = 8;
/** Every request costs $0.01: 10 prompt tokens at $1000 per 1M. */
const COST = 0.01;
const PID_HEADER = "x-stet-pid";
const LATENCY_MS = 200;
const HOUR_MS = 3_600_000;

const EVAL = `
import { defineEval, scorers, solvers } from "stet";
export default defineEval({
  name: "distributed",
  dataset: "./data.jsonl",
  solver: solvers.chat({
    model: "priced-model",
    baseURL: process.env.MOCK_URL,
    headers: { "${PID_HEADER}": String(process.pid) },
    prices: { input: 1000, output: 0 },
  }),
  scorers: [scorers.includes()],
});
`;

/**
 * A worker's start-up line on stderr: `worker <id8> joined run <id> (…): start-up <ms> ms (…)`,
 * the parenthesis naming what the start-up spent its time on (store, eval, first claim).
 */
const STARTUP_LINE = /^worker \S{8} joined run (r_\w+)\b[^:\n]*: start-up \d+ ms \(([^)\n]*)\)$/m;
const STARTUP_PARTS = [/\bstore \d+ ms\b/, /\beval\b[^,]* \d+ ms\b/, /\bfirst claim \d+ ms\b/];

interface AttemptRow {
  sample_id: string;
  epoch: number;
  status: string;
  output: string;
  cost_usd: number | null;
}

interface WorkerRow {
  token: string;
  pid: number;
  concurrency: number;
  keys_done: number;
  rejected: number;
  state: string;
}

const pidOf = (request: MockRequest): string => String(request.headers[PID_HEADER] ?? "");
/** The `application_name` of the connections of the worker of this index. */
const workerApp = (index: number) => `stet-worker-${index}`;

/** The pid of the process that computed a stored attempt: the mock's reply names it. */
const computedBy = (row: AttemptRow): string =>
  String(JSON.parse(row.output) as unknown).replace(/.* by /, "");

/**
 * A distributed run of `n` samples: a mock model answering after `latencyMs`, a fresh PostgreSQL
 * schema, the `stet run --distributed` process and `workers` `stet worker --run <id>` processes
 * (concurrency 8 each), started once the run's id is printed. Each worker's connections are named
 * `stet-worker-<index>` (`application_name`, as pg_stat_activity shows it). Processes still
 * alive when the test finishes are killed.
 */
async function distributedRun(options: {
  n: number;
  workers: number;
  latencyMs?: number;
  runArgs?: string[];
  env?: Record<string, string>;
  /** Environment of the `stet worker` process of this index only, over `env`. */
  workerEnv?: Record<number, Record<string, string>>;
  /** Answer nothing until this many processes have sent a request (so all have joined). */
  holdUntilProcesses?: number;
}) {
  let allJoined: () => void = () => {};
  const joined = new Promise<void>((resolve) => (allJoined = resolve));
  /** While set, the model answers nothing (see `pause`). */
  let paused: Promise<void> | null = null;
  const mock = await startMockOpenAI({
    latencyMs: options.latencyMs ?? LATENCY_MS,
    reply: (request) => `${request.key.replace("question", "answer")} by ${pidOf(request)}`,
    usage: { prompt_tokens: 10, completion_tokens: 5 },
    respond: async () => {
      if (paused) await paused;
      const hold = options.holdUntilProcesses;
      if (hold === undefined) return undefined;
      if (new Set(mock.requests.map(pidOf)).size >= hold) allJoined();
      await joined;
      return undefined;
    },
  });
  const project = evalProject({ "eval.mjs": EVAL, "data.jsonl": questions(options.n) });
  const { url, db } = testSchemaPool();
  const processes: CliProcess[] = [];
  onTestFinished(async () => {
    for (const p of processes) {
      if (p.child.exitCode === null && p.child.signalCode === null) {
        p.child.kill("SIGCONT");
        p.child.kill("SIGKILL");
      }
    }
    await Promise.all(processes.map((p) => p.done));
    await mock.close();
    project.cleanup();
  });
  const env = { STET_STORE: url, MOCK_URL: mock.url, OPENAI_API_KEY: "sk-test", ...options.env };
  const stet = (args: string[], extra: Record<string, string> = {}): CliProcess => {
    const p = startCli(args, { cwd: project.dir, env: { ...env, ...extra } });
    processes.push(p);
    return p;
  };
  const concurrency = ["--concurrency", String(CONCURRENCY)];
  const run = stet([
    "run",
    "eval.mjs",
    "--distributed",
    ...concurrency,
    ...(options.runArgs ?? []),
  ]);
  const first = await run.waitFor(/^run (r_\w+) · distributed · (\d+) keys$/m);
  const runId = first[1]!;
  expect(first.index, "the run's id is its first stdout line").toBe(0);
  expect(Number(first[2])).toBe(options.n);
  const workers = Array.from({ length: options.workers }, (_, i) => {
    const store = new URL(url);
    store.searchParams.set("application_name", workerApp(i));
    return stet(["worker", "--run", runId, ...concurrency], {
      STET_STORE: store.toString(),
      ...options.workerEnv?.[i],
    });
  });

  const attempts = async () =>
    (
      await db.query<AttemptRow>(
        `SELECT sample_id, epoch, status, output, cost_usd FROM attempts ORDER BY sample_id, attempt`,
      )
    ).rows;
  const workerRows = async () =>
    (
      await db.query<WorkerRow>(
        `SELECT token, pid, concurrency, keys_done, rejected, state FROM workers WHERE run_id = $1`,
        [runId],
      )
    ).rows;
  const runStatus = async () =>
    (
      await db.query<{ status: string; note: string | null }>(
        `SELECT status, note FROM runs WHERE id = $1`,
        [runId],
      )
    ).rows[0];
  const cancelRequested = async () =>
    (
      await db.query<{ cancel_requested: string | null }>(
        `SELECT cancel_requested FROM runs WHERE id = $1`,
        [runId],
      )
    ).rows[0]?.cancel_requested ?? null;
  /** The pids that have sent the mock at least one request. */
  const pidsSeen = () => new Set(mock.requests.map(pidOf));
  /** Waits until every process has sent requests and `committed` attempts are stored. */
  const midRun = async (committed: number) => {
    const all = [run, ...workers].map((p) => String(p.child.pid));
    await until(() => all.every((pid) => pidsSeen().has(pid)), "a request from every process");
    await until(async () => (await attempts()).length >= committed, `${committed} attempts`);
  };
  return {
    mock,
    db,
    dir: project.dir,
    env,
    runId,
    run,
    workers,
    all: [run, ...workers],
    attempts,
    workerRows,
    runStatus,
    cancelRequested,
    midRun,
    /**
     * Holds every answer from now on until the returned function is called: the run cannot
     * finish meanwhile, however fast the machine, which a cancel's test needs.
     */
    pause: () => {
      let resume: () => void = () => {};
      paused = new Promise<void>((resolve) => (resume = resolve));
      return () => {
        paused = null;
        resume();
      };
    },
    /** Starts another `stet <args>` process on the same project and store. */
    stet,
  };
}

/** The exit codes of `processes`, once they have all exited, with their stderr for messages. */
async function exits(processes: CliProcess[]): Promise<CliResult[]> {
  return Promise.all(processes.map((p) => p.done));
}
const codes = (results: CliResult[]) => results.map((r) => r.code);
const stderrs = (results: CliResult[]) => results.map((r) => r.stderr).join("\n---\n");

/** Each of the `n` samples' keys has exactly one attempt, and it is scored. */
function expectOneScoredAttemptPerKey(rows: AttemptRow[], n: number): void {
  const perKey = new Map<string, AttemptRow[]>();
  for (const row of rows) {
    const key = `${row.sample_id}#${row.epoch}`;
    perKey.set(key, [...(perKey.get(key) ?? []), row]);
  }
  const twice = [...perKey].filter(([, r]) => r.length !== 1).map(([key]) => key);
  expect(twice, "keys with more than one attempt").toEqual([]);
  expect(perKey.size).toBe(n);
  expect(rows.filter((r) => r.status !== "scored")).toEqual([]);
}

/** Requests beyond the first, per key: the model calls bought twice. */
const reExecutions = (mock: MockOpenAI) =>
  Object.values(mock.counts()).reduce((sum, count) => sum + count - 1, 0);

// Generous: a hang guard for several processes sharing two loaded cores, not a bound.
describe.skipIf(SKIP_POSTGRES)(
  "distributed runs: real worker processes on PostgreSQL",
  { timeout: 300_000 },
  () => {
    // How much faster four processes are than one is a figure of `npm run bench -- workers`
    // (keys/s with 1, 2 and 4 processes): a speed ratio measured here, beside other test files on
    // two cores, says more about the machine's load than about stet.
    it("four processes execute a run together, each key once, every one of them its share", async () => {
      const n = 1_000;
      // Held until all four have joined, so each has keys to take however slowly it starts.
      const four = await distributedRun({ n, workers: 3, holdUntilProcesses: 4 });
      const results = await exits(four.all);
      expect(codes(results), stderrs(results)).toEqual([0, 0, 0, 0]);
      for (const worker of results.slice(1)) {
        const [, runId, parts] = worker.stderr.match(STARTUP_LINE) ?? [];
        expect(runId, worker.stderr).toBe(four.runId);
        for (const part of STARTUP_PARTS) expect(parts).toMatch(part);
      }
      // Nothing was killed: no key was requested twice, and each has its one scored attempt.
      expect(Object.keys(four.mock.counts())).toHaveLength(n);
      expect(reExecutions(four.mock)).toBe(0);
      expectOneScoredAttemptPerKey(await four.attempts(), n);
      expect((await four.runStatus())?.status).toBe("completed");

      // Together: every process computed keys, and their shares add up to the run.
      const rows = await four.workerRows();
      expect(rows).toHaveLength(4);
      expect(
        rows.filter((w) => w.keys_done === 0),
        "processes that computed nothing",
      ).toEqual([]);
      expect(new Set((await four.attempts()).map(computedBy))).toEqual(
        new Set(four.all.map((p) => String(p.child.pid))),
      );
      expect(rows.reduce((sum, w) => sum + w.keys_done, 0)).toBe(n);
      expect(rows.map((w) => w.state)).toEqual(["finished", "finished", "finished", "finished"]);
      expect(rows.map((w) => w.rejected)).toEqual([0, 0, 0, 0]);

      const shown = await runCli(["show", four.runId, "--json"], { cwd: four.dir, env: four.env });
      expect(shown.code, shown.stderr).toBe(0);
      const { workers } = JSON.parse(shown.stdout) as { workers: Record<string, unknown>[] };
      expect(workers).toHaveLength(4);
      for (const w of workers) {
        expect(w).toMatchObject({ concurrency: CONCURRENCY, rejected: 0, state: "finished" });
        expect(w).toHaveProperty("heartbeatAgeMs");
      }
      expect(workers.map((w) => w.pid).sort()).toEqual(four.all.map((p) => p.child.pid).sort());
    });

    it("two of four processes SIGKILLed mid-run: the others finish, re-executing at most their in-flight keys", async () => {
      const n = 600;
      // Leases of an hour: the survivors can finish only by expiring the leases of the killed
      // processes as soon as their pids are gone from this host, never by waiting for them.
      const run = await distributedRun({ n, workers: 3, env: { STET_LEASE_MS: String(HOUR_MS) } });
      await run.midRun(150);
      const killed = [run.run, run.workers[0]!];
      for (const p of killed) p.child.kill("SIGKILL");
      expect(codes(await exits(killed))).toEqual([null, null]);

      const survivors = await exits(run.workers.slice(1));
      expect(codes(survivors), stderrs(survivors)).toEqual([0, 0]);

      expectOneScoredAttemptPerKey(await run.attempts(), n);
      expect(Object.keys(run.mock.counts())).toHaveLength(n);
      expect(reExecutions(run.mock)).toBeLessThanOrEqual(2 * CONCURRENCY);
      expect((await run.runStatus())?.status).toBe("completed");

      // Nothing stays leased: every key is done, and no lease names a worker still active.
      const open = await run.db.query(`SELECT * FROM leases WHERE done = 0`);
      expect(open.rows).toEqual([]);
      const live = await run.db.query(
        `SELECT l.* FROM leases l JOIN workers w ON w.token = l.token WHERE w.state = 'active'`,
      );
      expect(live.rows).toEqual([]);
      const leases = await run.db.query<{ n: string }>(`SELECT COUNT(*) AS n FROM leases`);
      expect(Number(leases.rows[0]!.n)).toBe(n);
      const rows = await run.workerRows();
      const killedPids = killed.map((p) => p.child.pid);
      for (const w of rows) {
        if (killedPids.includes(w.pid)) expect(w.state, `killed pid ${w.pid}`).not.toBe("active");
        else expect(w.state, `surviving pid ${w.pid}`).toBe("finished");
      }
    });

    it("a frozen worker loses its leases to the others, and its late commits are refused (exit 5)", async () => {
      const n = 700;
      // Only the worker to be frozen has a short lease; the others keep the default 30 s, which
      // no live process on a loaded machine misses: they must not lose their keys too.
      const leaseMs = 5_000;
      const run = await distributedRun({
        n,
        workers: 2,
        workerEnv: { 0: { STET_LEASE_MS: String(leaseMs) } },
      });
      await run.midRun(100);
      const frozen = run.workers[0]!;
      const pid = String(frozen.child.pid);
      const by = (rows: AttemptRow[]) => rows.filter((r) => computedBy(r) === pid);
      frozen.child.kill("SIGSTOP");
      await stopped(frozen.child.pid!);
      const stoppedAt = Date.now();
      expect((await sessions(run.db, workerApp(0))).open, "its sessions, by name").toBeGreaterThan(
        0,
      );
      // What it had sent to the database lands (or, a transaction left open, is rolled back when
      // the server ends the session): once every session of it is idle or gone, nothing more can.
      await until(
        async () => (await sessions(run.db, workerApp(0))).busy === 0,
        "the frozen worker's sessions to settle",
        60_000,
      );
      const storedBeforeFreeze = by(await run.attempts()).map((r) => r.sample_id);
      const committed = new Set(storedBeforeFreeze);
      const inFlight = [
        ...new Set(
          run.mock.requests
            .filter((r) => pidOf(r) === pid && r.receivedAt < stoppedAt)
            .map((r) => r.key),
        ),
      ].filter((key) => !committed.has(sampleIdOf(key)));
      expect(inFlight.length).toBeGreaterThan(0);
      // A key whose reply it had journaled (solvers.chat journals it) before its attempt commits
      // is replayed by the worker that takes it over, not requested again: paid for once.
      const journaled = new Set(
        (
          await run.db.query<{ sample_id: string }>(
            `SELECT DISTINCT sample_id FROM journal WHERE run_id = $1 AND attempt IS NULL`,
            [run.runId],
          )
        ).rows.map((row) => row.sample_id),
      );
      const replayed = inFlight.filter((key) => journaled.has(sampleIdOf(key)));
      const requestedAgain = inFlight.filter((key) => !journaled.has(sampleIdOf(key)));

      // The others take its keys over once its leases expire, while it sleeps.
      await until(
        () => requestedAgain.every((key) => (run.mock.counts()[key] ?? 0) >= 2),
        "the frozen worker's in-flight keys requested again by the others",
        120_000,
      );
      await new Promise((r) => setTimeout(r, Math.max(0, stoppedAt + 2 * leaseMs - Date.now())));
      frozen.child.kill("SIGCONT");

      const [late] = await exits([frozen]);
      expect(late!.code, late!.stderr).toBe(5);
      const others = await exits([run.run, run.workers[1]!]);
      expect(codes(others), stderrs(others)).toEqual([0, 0]);

      const rows = await run.attempts();
      expectOneScoredAttemptPerKey(rows, n);
      // Nothing it computed after its leases expired is stored: its outputs are the attempts it
      // had committed, and the replies it had journaled (committed by the workers that replayed them).
      expect(
        by(rows)
          .map((r) => r.sample_id)
          .sort(),
      ).toEqual([...storedBeforeFreeze, ...replayed.map(sampleIdOf)].sort());
      for (const key of replayed) expect(run.mock.counts()[key], key).toBe(1);
      const mine = (await run.workerRows()).find((w) => String(w.pid) === pid);
      expect(mine, "the frozen worker's row").toBeDefined();
      expect(mine!.rejected > 0 || mine!.state === "lost", JSON.stringify(mine)).toBe(true);
      expect((await run.runStatus())?.status).toBe("completed");
    });

    it("`stet cancel` stops every process of a distributed run; resume finishes it without executing a key twice", async () => {
      const n = 400;
      const run = await distributedRun({ n, workers: 2 });
      await run.midRun(100);
      // Held until the cancel is recorded: on a fast machine the workers could otherwise finish
      // every key before it lands, and the run would end completed.
      const unpause = run.pause();
      const cancel = startCli(["cancel", run.runId, "--wait", "120000"], {
        cwd: run.dir,
        env: run.env,
      });
      await until(async () => (await run.cancelRequested()) !== null, "the cancel request");
      unpause();
      const cancelled = await cancel.done;
      expect(cancelled.code, cancelled.stderr).toBe(0);
      const stopped = await exits(run.all);
      // The run's own process exits as an interrupted run does; a worker with nothing it may
      // claim any more exits 130 (interrupted) or 0.
      expect(stopped[0]!.code, stderrs(stopped)).toBe(130);
      for (const worker of stopped.slice(1)) expect([0, 130], worker.stderr).toContain(worker.code);
      expect(await run.runStatus()).toMatchObject({ status: "interrupted" });
      const before = await run.attempts();
      expect(before.length).toBeLessThan(n);
      // Stopped means stopped: no process sends the model anything more.
      const requestsAfterStop = run.mock.requests.length;
      await new Promise((r) => setTimeout(r, 500));
      expect(run.mock.requests.length).toBe(requestsAfterStop);

      const resumed = await runCli(["resume", run.runId], { cwd: run.dir, env: run.env });
      expect(resumed.code, resumed.stderr).toBe(0);
      expect(await run.runStatus()).toMatchObject({ status: "completed" });
      expectOneScoredAttemptPerKey(await run.attempts(), n);
      expect(Object.keys(run.mock.counts())).toHaveLength(n);
      expect(reExecutions(run.mock)).toBe(0);
    });

    it("a worker started without --run joins the open distributed run whose eval it can load", async () => {
      const n = 300;
      // Held until the worker has joined, so it has keys left to take however slowly it starts.
      const run = await distributedRun({ n, workers: 0, holdUntilProcesses: 2 });
      const worker = run.stet(["worker", "--concurrency", String(CONCURRENCY)]);
      const results = await exits([run.run, worker]);
      expect(codes(results), stderrs(results)).toEqual([0, 0]);
      expect(results[1]!.stderr.match(STARTUP_LINE)?.[1], results[1]!.stderr).toBe(run.runId);
      const rows = await run.workerRows();
      expect(rows).toHaveLength(2);
      expect(rows.every((w) => w.keys_done > 0 && w.state === "finished")).toBe(true);
      expectOneScoredAttemptPerKey(await run.attempts(), n);
      expect(reExecutions(run.mock)).toBe(0);
    });

    it("the spend cap holds over all workers: every process stops at it (exit 6)", async () => {
      const n = 400;
      const cap = 2;
      // Held until all three have joined: however slowly a worker starts on a loaded machine, it
      // is in before the cap is reached, so the cap is tested over all their spend.
      const run = await distributedRun({
        n,
        workers: 2,
        runArgs: ["--max-cost", String(cap)],
        holdUntilProcesses: 3,
      });
      const results = await exits(run.all);
      expect(codes(results), stderrs(results)).toEqual([6, 6, 6]);

      const rows = await run.attempts();
      const spent = rows.reduce((sum, r) => sum + (r.cost_usd ?? 0), 0);
      // Over the cap by at most what every process had in flight; the cap is used, not left idle.
      const inFlight = 3 * CONCURRENCY * COST;
      const perProcess = new Map<string, number>();
      for (const row of rows)
        perProcess.set(computedBy(row), (perProcess.get(computedBy(row)) ?? 0) + 1);
      const figures = `spent $${spent.toFixed(2)} (${rows.length} attempts; per process ${[...perProcess.values()].join(", ")})`;
      expect(spent, figures).toBeLessThanOrEqual(cap + inFlight + 1e-9);
      expect(spent).toBeGreaterThan(cap - inFlight);
      // Every request bought was committed (its spend counted), and no key was bought twice.
      expect(rows).toHaveLength(run.mock.requests.length);
      expect(reExecutions(run.mock)).toBe(0);
      // Every process joined before the cap stopped them, so the cap is over all their spend.
      expect(new Set(rows.map(computedBy)).size).toBe(3);
      expect(await run.runStatus()).toMatchObject({
        status: "interrupted",
        note: expect.stringMatching(/^budget: spent \$\d+\.\d+ of the \$2\.00 cap$/),
      });
    });
  },
);

/**
 * The PostgreSQL sessions named `application`, and how many of them are not idle: running a
 * statement, or inside a transaction (whose next statement may be on its way).
 */
async function sessions(db: pg.Pool, application: string): Promise<{ open: number; busy: number }> {
  const { rows } = await db.query<{ open: string; busy: string }>(
    `SELECT COUNT(*) AS open, COUNT(*) FILTER (WHERE state <> 'idle') AS busy
     FROM pg_stat_activity WHERE application_name = $1`,
    [application],
  );
  return { open: Number(rows[0]!.open), busy: Number(rows[0]!.busy) };
}

/** `question 7` → `q007`: the sample id (see questions()) of the mock's key for a request. */
function sampleIdOf(key: string): string {
  return `q${key.replace("question ", "").padStart(3, "0")}`;
}
