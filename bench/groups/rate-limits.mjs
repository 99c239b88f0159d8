// The rate-limits group: the achieved request rate ÷ the declared limit, against a local server
// that enforces 600 requests per 6 s window (600 RPM ten times faster) and sends no rate-limit
// headers (429 and retry-after only), for one process at concurrency 64 and for four worker
// processes on PostgreSQL at concurrency 16 each; then one process with no declared limit, which
// learns it from the 429s alone (1,000 and 3,000 samples: the 429s of the first window's burst
// and those after it).
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

/** A chat-completions server admitting PER_WINDOW requests per sliding WINDOW_MS, else 429. */
async function limitedServer() {
  const admitted = [];
  let rejected = [];
  const server = createServer((req, res) => {
    req.resume();
    req.on("end", () => {
      const now = performance.now();
      const recent = admitted.filter((at) => at > now - WINDOW_MS).length;
      if (recent >= PER_WINDOW) {
        rejected.push(now);
        res.writeHead(429, { "retry-after": "1", "content-type": "application/json" });
        res.end(JSON.stringify({ error: { message: "rate limited" } }));
        return;
      }
      admitted.push(now);
      res.writeHead(200, { "content-type": "application/json" });
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

/** One process with no declared limit: 429s ÷ requests, those after the first burst, rate ÷ limit. */
async function learned(server, n, reps) {
  const dir = project({ "eval.mjs": rateEval(false), "data.jsonl": jsonl(n) });
  try {
    const runs = [];
    for (let r = 0; r < reps; r++) {
      await stet(["run", "eval.mjs"], dir, { MOCK_URL: server.url }).done;
      runs.push(server.take());
    }
    const share = (f) => (100 * f.rejected) / (f.rejected + f.admitted.length);
    const range = (xs, digits) =>
      `${median(xs).toFixed(digits)} (${Math.min(...xs).toFixed(digits)}–${Math.max(...xs).toFixed(digits)})`;
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
    const four = [];
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
        four.push(server.take());
      } finally {
        await dropSchema(schema);
      }
    }
    report(
      "rate limits: four workers on PostgreSQL, concurrency 16 each, achieved ÷ limit",
      figure(four),
      "≥ 0.9",
      median(four.map(ratioOf)) >= 0.9,
    );
  } finally {
    await server.close();
    rmSync(dir, { recursive: true, force: true });
  }
}
