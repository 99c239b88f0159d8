// The rate-limits group: the achieved request rate ÷ the declared limit, against a local server
// that enforces 600 requests per 6 s window (600 RPM ten times faster) and sends no rate-limit
// headers (429 and retry-after only), for one process at concurrency 64 and for four worker
// processes on PostgreSQL at concurrency 16 each; then one process with no declared limit, which
// learns it from the 429s alone (1,000 and 3,000 samples: the 429s of the first window's burst
// and those after it); then four workers with no declared limit, with OpenAI's rate-limit headers
// and without (1,500 samples: 429s ÷ requests, the most in a window, and each 6 s window's
// admitted requests and 429s from the first request on).
import { spawn } from "node:child_process";
import { rmSync } from "node:fs";
import { createServer } from "node:http";
import {
  BIN,
  dropSchema,
  jsonl,
  median,
  POSTGRES,
  postgresAnswers,
  project,
  quick,
  report,
} from "../harness.mjs";

const WINDOW_MS = 6000;
const PER_WINDOW = 600;
const N = 1000;

const rateEval = (declared = true) => `
import { defineEval, scorers, solvers } from "stet";
export default defineEval({
  name: "bench-rate",
  dataset: "./data.jsonl",
  solver: solvers.chat({ model: "gpt-test", baseURL: process.env.MOCK_URL, apiKey: "sk-bench", maxTokens: 5 }),
  scorers: [scorers.exact()],
  concurrency: 64,
  ${declared ? `rateLimits: { "openai:gpt-test": { rpm: ${(PER_WINDOW * 60_000) / WINDOW_MS}, windowMs: ${WINDOW_MS} } },` : ""}
});
`;

/**
 * A chat-completions server admitting PER_WINDOW requests per sliding WINDOW_MS, else 429; with
 * `headers`, every answer says the window's limit, what is left of it and when its oldest
 * request leaves it, as OpenAI's headers do (the test server's, test/helpers).
 */
async function limitedServer({ headers = false } = {}) {
  const admitted = [];
  let rejected = [];
  const server = createServer((req, res) => {
    req.resume();
    req.on("end", () => {
      const now = performance.now();
      const recent = admitted.filter((at) => at > now - WINDOW_MS);
      const over = recent.length >= PER_WINDOW;
      if (!over) recent.push(now);
      const said = headers ? limitHeaders(recent, now) : {};
      if (over) {
        rejected.push(now);
        res.writeHead(429, { ...said, "retry-after": "1", "content-type": "application/json" });
        res.end(JSON.stringify({ error: { message: "rate limited" } }));
        return;
      }
      admitted.push(now);
      res.writeHead(200, { ...said, "content-type": "application/json" });
      res.end(
        JSON.stringify({
          choices: [
            { index: 0, message: { role: "assistant", content: "ok" }, finish_reason: "stop" },
          ],
          usage: { prompt_tokens: 10, completion_tokens: 5 },
        }),
      );
    });
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${server.address().port}/v1`,
    take: () => {
      const figures = { admitted: [...admitted], rejected: rejected.length, rejectedAt: rejected };
      admitted.length = 0;
      rejected = [];
      return figures;
    },
    close: () => new Promise((resolve) => server.close(resolve)),
  };
}

/** OpenAI's headers of the requests axis, for a window holding `recent` (oldest first) at `now`. */
function limitHeaders(recent, now) {
  return {
    "x-ratelimit-limit-requests": String(PER_WINDOW),
    "x-ratelimit-remaining-requests": String(Math.max(0, PER_WINDOW - recent.length)),
    "x-ratelimit-reset-requests": `${Math.max(1, Math.ceil(recent[0] + WINDOW_MS - now))}ms`,
  };
}

function stet(args, cwd, env) {
  const child = spawn(process.execPath, [BIN, ...args], {
    cwd,
    env: { ...process.env, ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (d) => (stdout += d));
  child.stderr.on("data", (d) => (stderr += d));
  const firstLine = new Promise((resolve) =>
    child.stdout.on("data", () => stdout.includes("\n") && resolve(stdout.split("\n")[0])),
  );
  const done = new Promise((resolve, reject) =>
    child.on("close", (code) =>
      code === 0 ? resolve() : reject(new Error(`stet ${args[0]} exited ${code}\n${stderr}`)),
    ),
  );
  return { firstLine, done };
}

/** Admitted requests per limit: over the span from the first to the last admitted request. */
function ratioOf({ admitted }) {
  const span = admitted[admitted.length - 1] - admitted[0];
  return admitted.length / span / (PER_WINDOW / WINDOW_MS);
}

/** 429s more than a second after the first: those after the first window's burst. */
function afterBurst({ rejectedAt }) {
  return rejectedAt.filter((at) => at > rejectedAt[0] + 1000).length;
}

/** 429s ÷ requests, %. */
const share = (f) => (100 * f.rejected) / (f.rejected + f.admitted.length);
const range = (xs, digits) =>
  `${median(xs).toFixed(digits)} (${Math.min(...xs).toFixed(digits)}–${Math.max(...xs).toFixed(digits)})`;

/** The most requests that arrived (admitted or refused) in any WINDOW_MS. */
function maxInWindow({ admitted, rejectedAt }) {
  const arrived = [...admitted, ...rejectedAt].sort((a, b) => a - b);
  let most = 0;
  for (let first = 0, last = 0; last < arrived.length; last++) {
    while (arrived[first] <= arrived[last] - WINDOW_MS) first++;
    most = Math.max(most, last - first + 1);
  }
  return most;
}

/** Each WINDOW_MS from the first arrival on, as admitted+refused: "600+11 600+1 300+4". */
function perWindow({ admitted, rejectedAt }) {
  const from = Math.min(admitted[0], rejectedAt[0] ?? Infinity);
  const windows = [];
  const count = (ats) => {
    for (const at of ats) {
      const w = Math.floor((at - from) / WINDOW_MS);
      windows[w] ??= [0, 0];
      windows[w][ats === admitted ? 0 : 1]++;
    }
  };
  count(admitted);
  count(rejectedAt);
  return [...windows].map((w = [0, 0]) => w.join("+")).join(" ");
}

/**
 * The server's figures of `reps` runs of dir's eval by four processes on PostgreSQL (a
 * `--distributed` run and three `stet worker`s), each at concurrency 16, each on a fresh schema.
 */
async function fourWorkers(server, dir, reps) {
  const runs = [];
  for (let r = 0; r < reps; r++) {
    const schema = `stet_bench_rate_${process.pid}_${r}`;
    const store = new URL(POSTGRES);
    store.searchParams.set("schema", schema);
    const env = { MOCK_URL: server.url, STET_STORE: store.toString() };
    try {
      const run = stet(["run", "eval.mjs", "--distributed", "--concurrency", "16"], dir, env);
      const runId = (await run.firstLine).match(/^run (r_\w+)/)?.[1];
      const workers = [1, 2, 3].map(() =>
        stet(["worker", "--run", runId, "--concurrency", "16"], dir, env),
      );
      await Promise.all([run, ...workers].map((p) => p.done));
      runs.push(server.take());
    } finally {
      await dropSchema(schema);
    }
  }
  return runs;
}

/**
 * Four workers with no declared limit, against `server` (with rate-limit headers or without):
 * 429s ÷ requests, the most in a window, and each run's windows (admitted+429s).
 */
async function fourLearning(server, reps, headers) {
  const n = 1.5 * N;
  const dir = project({ "eval.mjs": rateEval(false), "data.jsonl": jsonl(n) });
  try {
    const runs = await fourWorkers(server, dir, reps);
    report(
      `rate limits: four workers on PostgreSQL, concurrency 16 each, no declared limit, ${headers ? "rate-limit headers" : "no rate-limit headers"}, ${n} samples: 429s ÷ requests`,
      `${range(runs.map(share), 2)} % (${runs.map((f) => f.rejected).join(", ")} 429s), most in a window ${range(runs.map(maxInWindow), 0)}; windows ${runs.map(perWindow).join(" / ")}`,
      "≤ 1 %",
      median(runs.map(share)) <= 1,
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** One process with no declared limit: 429s ÷ requests, those after the first burst, rate ÷ limit. */
async function learned(server, n, reps) {
  const dir = project({ "eval.mjs": rateEval(false), "data.jsonl": jsonl(n) });
  try {
    const runs = [];
    for (let r = 0; r < reps; r++) {
      await stet(["run", "eval.mjs"], dir, { MOCK_URL: server.url }).done;
      runs.push(server.take());
    }
    report(
      `rate limits: one process, no declared limit, no rate-limit headers, ${n} samples: 429s ÷ requests`,
      `${range(runs.map(share), 2)} %, after the first burst ${range(runs.map(afterBurst), 0)}; ${range(runs.map(ratioOf), 3)} of the limit`,
      "≤ 1 %",
      median(runs.map(share)) <= 1,
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

export default async function rateLimitsGroup() {
  const server = await limitedServer();
  const dir = project({ "eval.mjs": rateEval(), "data.jsonl": jsonl(N) });
  const reps = quick ? 1 : 3;
  try {
    const single = [];
    for (let r = 0; r < reps; r++) {
      rmSync(`${dir}/.stet`, { recursive: true, force: true });
      await stet(["run", "eval.mjs"], dir, { MOCK_URL: server.url }).done;
      single.push(server.take());
    }
    const figure = (runs) =>
      `${median(runs.map(ratioOf)).toFixed(3)} of the limit (${Math.min(...runs.map(ratioOf)).toFixed(3)}–${Math.max(...runs.map(ratioOf)).toFixed(3)}), 429s ${median(runs.map((f) => f.rejected))}`;
    report(
      "rate limits: one process, concurrency 64, achieved ÷ limit",
      figure(single),
      "≥ 0.9",
      median(single.map(ratioOf)) >= 0.9,
    );
    await learned(server, N, reps);
    await learned(server, 3 * N, reps);
    if (!(await postgresAnswers())) {
      console.log(
        `- rate limits, four workers: skipped (PostgreSQL at ${POSTGRES} does not answer)`,
      );
      return;
    }
    const four = await fourWorkers(server, dir, reps);
    report(
      "rate limits: four workers on PostgreSQL, concurrency 16 each, achieved ÷ limit",
      figure(four),
      "≥ 0.9",
      median(four.map(ratioOf)) >= 0.9,
    );
    await fourLearning(server, reps, false);
    const withHeaders = await limitedServer({ headers: true });
    try {
      await fourLearning(withHeaders, reps, true);
    } finally {
      await withHeaders.close();
    }
  } finally {
    await server.close();
    rmSync(dir, { recursive: true, force: true });
  }
}
