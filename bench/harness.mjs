// What every benchmark group shares: the repetitions, medians with their spread, the printed
// figures, temporary projects, the CLI's wall time and peak RSS, the mock model, PostgreSQL.
import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, symlinkSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { defineEval, openPostgresStore, resolveEval, runEval, scorers } from "./stet.mjs";

export const REPO = fileURLToPath(new URL("..", import.meta.url));
export const BIN = join(REPO, "bin/stet.js");
export const RSS = join(REPO, "bench/report-rss.mjs");

export const quick = process.argv.includes("quick");
export const reps = quick ? 1 : 5;

export const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
export const fmt = (ms) => `${(ms / 1000).toFixed(2)} s`;
/** A median with the spread of the repetitions: "0.23 s (0.21–0.27)". */
export const spread = (xs, show = fmt) =>
  xs.length === 1
    ? show(xs[0])
    : `${show(median(xs))} (${show(Math.min(...xs)).replace(/ .*/, "")}–${show(Math.max(...xs))})`;
const rows = [];
export function report(name, figure, target, ok) {
  rows.push({ name, figure, target, ok });
  console.log(`${ok ? "✓" : "✗"} ${name}: ${figure} (target ${target})`);
}

/** The last line of a benchmark: how many of the figures printed are within their target. */
export function summary() {
  const failed = rows.filter((r) => !r.ok).length;
  console.log(`\n${rows.length - failed} of ${rows.length} figures within target`);
}

export function project(files) {
  const dir = mkdtempSync(join(tmpdir(), "stet-bench-"));
  mkdirSync(join(dir, "node_modules"));
  symlinkSync(REPO, join(dir, "node_modules/stet"), "dir");
  for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
  return dir;
}

/** JSONL rows `from` to `n - 1` whose input is their target (the instant solver's echo scores 1). */
export function jsonl(n, from = 0) {
  let out = "";
  for (let i = from; i < n; i++)
    out += `{"id":"s${i}","input":"question ${i}","target":"question ${i}"}\n`;
  return out;
}

/** An in-memory eval of `n` samples whose solver echoes the input, resolved as the CLI would. */
export function instant(n, concurrency) {
  const dataset = Array.from({ length: n }, (_, i) => ({
    id: `s${i}`,
    input: `question ${i}`,
    target: `question ${i}`,
  }));
  const ev = defineEval({
    name: "bench-instant",
    dataset,
    solver: (sample) => sample.input,
    scorers: [scorers.exact()],
    concurrency,
  });
  return resolveEval(ev, { baseDir: process.cwd() });
}

/**
 * Runs the CLI; resolves with wall time (ms, from spawn to exit) and peak RSS, rejecting unless it
 * exits `expectCode`. `discard`: its stdout goes to /dev/null (an export of millions of rows).
 */
export function cli(args, cwd, env = {}, expectCode = 0, { discard = false } = {}) {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const child = spawn(process.execPath, ["--import", RSS, BIN, ...args], {
      cwd,
      env: { ...process.env, ...env },
      stdio: ["ignore", discard ? "ignore" : "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout?.on("data", (d) => (stdout += d));
    child.stderr.on("data", (d) => (stderr += d));
    child.on("close", (code) => {
      const wallMs = performance.now() - t0;
      if (code !== expectCode)
        return reject(new Error(`stet ${args.join(" ")} exited ${code}\n${stderr}`));
      const rssKb = Number(stderr.match(/bench:maxrss_kb=(\d+)/)?.[1] ?? NaN);
      resolve({ wallMs, rssKb, stdout });
    });
  });
}

/** Wall times of `reps` CLI runs, each after `before()`; `args(i)` gives each one's arguments. */
export async function walls(dir, args, before = () => {}) {
  const figures = [];
  for (let i = 0; i < reps; i++) {
    before();
    figures.push((await cli(args(i), dir)).wallMs);
  }
  return figures;
}

/** Samples per second of 10,000 instant samples on fresh stores that `open` makes. */
export async function rate(concurrency, open) {
  const ev = await instant(10_000, concurrency);
  const figures = [];
  for (let i = 0; i < reps; i++) {
    const { store, dispose } = await open();
    const t0 = performance.now();
    await runEval({ store, eval: ev });
    figures.push(10_000 / ((performance.now() - t0) / 1000));
    await store.close();
    await dispose();
  }
  return figures;
}

export const perSecondFmt = (r) => `${Math.round(r).toLocaleString()}/s`;

/**
 * A chat-completions server on loopback answering after `latencyMs`. With a `log`, it appends
 * each request's arrival ({ at: performance.now(), pid: its x-stet-pid header }).
 */
export async function mockModel(latencyMs, log) {
  const server = createServer((req, res) => {
    let body = "";
    req.on("data", (d) => (body += d));
    req.on("end", () => {
      log?.push({ at: performance.now(), pid: req.headers["x-stet-pid"] });
      const { messages } = JSON.parse(body);
      const answer = JSON.stringify({
        choices: [
          {
            index: 0,
            message: { role: "assistant", content: messages.at(-1).content },
            finish_reason: "stop",
          },
        ],
        usage: { prompt_tokens: 12, completion_tokens: 4 },
      });
      const send = () => res.writeHead(200, { "content-type": "application/json" }).end(answer);
      if (latencyMs) setTimeout(send, latencyMs);
      else send();
    });
  });
  server.keepAliveTimeout = 30_000;
  await new Promise((r) => server.listen(0, "127.0.0.1", r));
  return { url: `http://127.0.0.1:${server.address().port}/v1`, close: () => server.close() };
}

export const chatEval = (concurrency) => `
import { defineEval, scorers, solvers } from "stet";
export default defineEval({
  name: "bench-chat",
  dataset: "./data.jsonl",
  solver: solvers.chat({ model: "gpt-4o-mini", baseURL: process.env.MOCK_URL, apiKey: "sk-bench" }),
  scorers: [scorers.exact()],
  concurrency: ${concurrency},
});
`;

export const POSTGRES =
  process.env.STET_BENCH_POSTGRES ?? "postgres://postgres@127.0.0.1:5432/test";

export async function dropSchema(schema) {
  const { default: pg } = await import("pg");
  const client = new pg.Client({ connectionString: POSTGRES });
  await client.connect();
  await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  await client.end();
}

/** Whether the PostgreSQL at POSTGRES answers. */
export async function postgresAnswers() {
  const probe = openPostgresStore(POSTGRES, { schema: "stet_bench_probe" });
  const ok = await probe.reads.listRuns({ limit: 1 }).then(
    () => true,
    () => false,
  );
  await probe.close();
  if (ok) await dropSchema("stet_bench_probe");
  return ok;
}
