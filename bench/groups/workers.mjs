// The workers group: distributed runs, keys per second by the number of worker processes.
import { spawn } from "node:child_process";
import { rmSync } from "node:fs";
import {
  BIN,
  dropSchema,
  jsonl,
  median,
  mockModel,
  perSecondFmt,
  postgresAnswers,
  POSTGRES,
  project,
  quick,
  report,
  spread,
} from "../harness.mjs";

/** A chat eval whose requests name the process that sent them (x-stet-pid). */
const workersEval = `
import { defineEval, scorers, solvers } from "stet";
export default defineEval({
  name: "bench-workers",
  dataset: "./data.jsonl",
  solver: solvers.chat({
    model: "gpt-4o-mini",
    baseURL: process.env.MOCK_URL,
    apiKey: "sk-bench",
    headers: { "x-stet-pid": String(process.pid) },
  }),
  scorers: [scorers.exact()],
});
`;

/** Spawns `stet <args>`: its first stdout line, and its exit (rejecting on a non-zero code). */
function spawnStet(args, cwd, env) {
  const child = spawn(process.execPath, [BIN, ...args], {
    cwd,
    env: { ...process.env, ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  child.stderr.on("data", (d) => (stderr += d));
  const firstLine = new Promise((resolve, reject) => {
    child.stdout.on("data", (d) => {
      stdout += d;
      if (stdout.includes("\n")) resolve(stdout.split("\n")[0]);
    });
    child.on("close", () => reject(new Error(`stet ${args[0]} printed no line\n${stderr}`)));
  });
  const done = new Promise((resolve, reject) =>
    child.on("close", (code) =>
      code === 0
        ? resolve()
        : reject(new Error(`stet ${args.join(" ")} exited ${code}\n${stderr}`)),
    ),
  );
  firstLine.catch(() => {});
  return { firstLine, done };
}

/**
 * Requests/s at the mock in the steady state of `processes` processes: from when every one has
 * sent a request (the last to start sends its first) until the first sends its last (runs dry).
 */
function steadyRate(log, processes) {
  const spans = new Map();
  for (const { at, pid } of log) {
    const span = spans.get(pid) ?? { first: at, last: at };
    spans.set(pid, { first: Math.min(span.first, at), last: Math.max(span.last, at) });
  }
  if (spans.size !== processes)
    throw new Error(`${spans.size} processes sent requests, not ${processes}`);
  const start = Math.max(...[...spans.values()].map((s) => s.first));
  const end = Math.min(...[...spans.values()].map((s) => s.last));
  const inWindow = log.filter(({ at }) => at >= start && at < end).length;
  return (inWindow / (end - start)) * 1000;
}

/**
 * One distributed run of `n` keys by `processes` processes on a fresh PostgreSQL schema: the
 * `stet run --distributed` and processes − 1 `stet worker --run <id>`, concurrency 8 each. Keys/s
 * end to end (the run's spawn to the last exit) and in the steady state at the mock.
 */
async function distributedRun(n, processes, mock, dir) {
  const schema = `stet_bench_${process.pid}_${Math.floor(Math.random() * 1e9)}`;
  const store = new URL(POSTGRES);
  store.searchParams.set("schema", schema);
  const env = { MOCK_URL: mock.url, STET_STORE: store.toString() };
  const concurrency = ["--concurrency", "8"];
  mock.log.length = 0;
  try {
    const t0 = performance.now();
    const run = spawnStet(["run", "eval.mjs", "--distributed", ...concurrency], dir, env);
    const runId = (await run.firstLine).match(/^run (r_\w+)/)?.[1];
    if (!runId) throw new Error(`no run id in the first line: ${await run.firstLine}`);
    const workers = Array.from({ length: processes - 1 }, () =>
      spawnStet(["worker", "--run", runId, ...concurrency], dir, env),
    );
    await Promise.all([run, ...workers].map((p) => p.done));
    const endToEnd = (n / (performance.now() - t0)) * 1000;
    return { endToEnd, steady: steadyRate(mock.log, processes) };
  } finally {
    await dropSchema(schema);
  }
}

/**
 * Distributed runs (issue 16): keys/s with 1, 2 and 4 worker processes (the `run --distributed`
 * counts as one) on a 0 ms and a 200 ms mock model, as ratios to one process, in the steady state
 * at the mock (start-up and tail excluded) and end to end (start-up included).
 */
export default async function workersGroup() {
  if (!(await postgresAnswers())) {
    console.log(`- workers: skipped (PostgreSQL at ${POSTGRES} does not answer)`);
    return;
  }
  const workerReps = quick ? 1 : 3;
  for (const [latencyMs, n] of [
    [0, 1_000],
    [200, 480],
  ]) {
    const log = [];
    const mock = { ...(await mockModel(latencyMs, log)), log };
    const dir = project({ "eval.mjs": workersEval, "data.jsonl": jsonl(n) });
    try {
      const figures = new Map([1, 2, 4].map((p) => [p, { steady: [], endToEnd: [] }]));
      for (let r = 0; r < workerReps; r++) {
        for (const [processes, f] of figures) {
          const { steady, endToEnd } = await distributedRun(n, processes, mock, dir);
          f.steady.push(steady);
          f.endToEnd.push(endToEnd);
        }
      }
      const one = figures.get(1);
      for (const [processes, f] of figures) {
        const ratio = (xs, base) => (median(xs) / median(base)).toFixed(2);
        const steadyRatio = median(f.steady) / median(one.steady);
        const target = processes === 4 && latencyMs === 200 ? "≥ 3.6 × (steady)" : "—";
        report(
          `keys/s, ${n} chat keys × ${latencyMs} ms mock, PostgreSQL, ${processes} process(es) × concurrency 8 (median of ${workerReps})`,
          `steady ${spread(f.steady, perSecondFmt)} = ${steadyRatio.toFixed(2)} × one; ` +
            `end to end ${spread(f.endToEnd, perSecondFmt)} = ${ratio(f.endToEnd, one.endToEnd)} × one`,
          target,
          target === "—" || steadyRatio >= 3.6,
        );
      }
    } finally {
      mock.close();
      rmSync(dir, { recursive: true, force: true });
    }
  }
}
