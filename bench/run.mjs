// stet benchmarks: prints figures (medians of repeated runs), asserts nothing.
//   npm run bench            all of them
//   npm run bench -- quick   fewer repetitions
//   npm run bench -- chat    only some groups (startup, throughput, chat, large, postgres, journal,
//                            sandbox, report, workers, recovery), with or without quick
// Each figure is the median of 5 repetitions (1 with quick), with the min and max beside it.
// The postgres and workers groups use STET_BENCH_POSTGRES, else
// postgres://postgres@127.0.0.1:5432/test, in schemas of their own that they drop afterwards;
// they are skipped when that server does not answer.
import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import Database from "better-sqlite3";
import {
  defineEval,
  openPostgresStore,
  openSqliteStore,
  resolveEval,
  resumeRun,
  runEval,
  scorers,
  createSandbox,
} from "./stet.mjs";

const REPO = fileURLToPath(new URL("..", import.meta.url));
const BIN = join(REPO, "bin/stet.js");
const RSS = join(REPO, "bench/report-rss.mjs");
const quick = process.argv.includes("quick");
const GROUPS = [
  "startup",
  "throughput",
  "chat",
  "large",
  "postgres",
  "journal",
  "sandbox",
  "report",
  "workers",
  "recovery",
];
const chosen = GROUPS.filter((g) => process.argv.includes(g));
const runs = (group) => chosen.length === 0 || chosen.includes(group);
const reps = quick ? 1 : 5;

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const fmt = (ms) => `${(ms / 1000).toFixed(2)} s`;
/** A median with the spread of the repetitions: "0.23 s (0.21–0.27)". */
const spread = (xs, show = fmt) =>
  xs.length === 1
    ? show(xs[0])
    : `${show(median(xs))} (${show(Math.min(...xs)).replace(/ .*/, "")}–${show(Math.max(...xs))})`;
const rows = [];
function report(name, figure, target, ok) {
  rows.push({ name, figure, target, ok });
  console.log(`${ok ? "✓" : "✗"} ${name}: ${figure} (target ${target})`);
}

function project(files) {
  const dir = mkdtempSync(join(tmpdir(), "stet-bench-"));
  mkdirSync(join(dir, "node_modules"));
  symlinkSync(REPO, join(dir, "node_modules/stet"), "dir");
  for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
  return dir;
}

function jsonl(n) {
  let out = "";
  for (let i = 0; i < n; i++)
    out += `{"id":"s${i}","input":"question ${i}","target":"question ${i}"}\n`;
  return out;
}

/** An in-memory eval of `n` samples whose solver echoes the input, resolved as the CLI would. */
function instant(n, concurrency) {
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
 * exits `expectCode`.
 */
function cli(args, cwd, env = {}, expectCode = 0) {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const child = spawn(process.execPath, ["--import", RSS, BIN, ...args], {
      cwd,
      env: { ...process.env, ...env },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d) => (stdout += d));
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

/**
 * A chat-completions server on loopback answering after `latencyMs`. With a `log`, it appends
 * each request's arrival ({ at: performance.now(), pid: its x-stet-pid header }).
 */
async function mockModel(latencyMs, log) {
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

const chatEval = (concurrency) => `
import { defineEval, scorers, solvers } from "stet";
export default defineEval({
  name: "bench-chat",
  dataset: "./data.jsonl",
  solver: solvers.chat({ model: "gpt-4o-mini", baseURL: process.env.MOCK_URL, apiKey: "sk-bench" }),
  scorers: [scorers.exact()],
  concurrency: ${concurrency},
});
`;

/**
 * One chat request as the floors send it: node:http over a keep-alive agent, nothing else
 * (`post(content)` resolves with the parsed reply). Source text, for the generated files below.
 */
const BARE_POST = `
import http from "node:http";
const agent = new http.Agent({ keepAlive: true });
const url = new URL(process.env.MOCK_URL + "/chat/completions");
const post = (content) => new Promise((resolve, reject) => {
  const body = JSON.stringify({ model: "gpt-4o-mini", messages: [{ role: "user", content }] });
  const req = http.request(url, { method: "POST", agent, headers: { "content-type": "application/json" } }, (res) => {
    let text = "";
    res.on("data", (d) => (text += d));
    res.on("end", () => resolve(JSON.parse(text)));
  });
  req.on("error", reject);
  req.end(body);
});
`;

/**
 * The engine's own floor under the latency-bound figure: a stet run whose solver sends the bare
 * client's request itself, unjournaled, scored like the chat eval.
 */
const rawRequestEval = (concurrency) => `
import { defineEval, scorers } from "stet";
${BARE_POST}
export default defineEval({
  name: "bench-raw-request",
  dataset: "./data.jsonl",
  solver: async (sample) => (await post(sample.input)).choices[0].message.content,
  scorers: [scorers.exact()],
  concurrency: ${concurrency},
  journal: false,
});
`;

const instantEval = `
import { defineEval, scorers } from "stet";
export default defineEval({
  name: "bench-instant",
  dataset: "./data.jsonl",
  solver: (sample) => sample.input,
  scorers: [scorers.exact()],
  concurrency: 16,
});
`;

/** A 1-sample eval with an instant solver: what start-up costs, and little else. */
const oneEval = (types) => `
import { defineEval, scorers } from "stet";
${types ? "type Row = { id: string; input: string; target: string };\nconst rows: Row[] =" : "const rows ="} [{ id: "a", input: "x", target: "x" }];
export default defineEval({
  name: "one",
  dataset: rows,
  solver: (sample${types ? ": { input: unknown }" : ""}) => String(sample.input),
  scorers: [scorers.exact()],
});
`;

/** Wall times of `reps` CLI runs, each after `before()`; `args(i)` gives each one's arguments. */
async function walls(dir, args, before = () => {}) {
  const figures = [];
  for (let i = 0; i < reps; i++) {
    before();
    figures.push((await cli(args(i), dir)).wallMs);
  }
  return figures;
}

/**
 * Start-up as a user sees it: the CLI run from a project that depends on stet, on a new store
 * each time, for a 1-sample eval in TypeScript (cold: no transpile cache; warm: cached) and in
 * plain JavaScript; and `stet list` over a store of 1,000 runs.
 */
async function startup() {
  const dir = project({ "one.eval.ts": oneEval(true), "one.eval.mjs": oneEval(false) });
  const cache = join(dir, "node_modules/.cache/stet");
  let stores = 0;
  const runOf = (file) => () => ["run", file, "--store", join(dir, `s${stores++}.db`)];
  const budget = (name, figures, limitMs) =>
    report(name, spread(figures), `≤ ${fmt(limitMs)}`, median(figures) <= limitMs);
  try {
    report("`stet --version`", spread(await walls(dir, () => ["--version"])), "—", true);
    const clear = () => rmSync(cache, { recursive: true, force: true });
    budget(
      "`stet run` of a 1-sample .ts eval, cold cache",
      await walls(dir, runOf("one.eval.ts"), clear),
      350,
    );
    await cli(runOf("one.eval.ts")(), dir);
    budget(
      "`stet run` of a 1-sample .ts eval, warm cache",
      await walls(dir, runOf("one.eval.ts")),
      250,
    );
    budget("`stet run` of a 1-sample .mjs eval", await walls(dir, runOf("one.eval.mjs")), 200);

    const db = join(dir, "list.db");
    const store = openSqliteStore(db);
    const ev = await instant(1, 1);
    for (let i = 0; i < 1_000; i++) await runEval({ store, eval: ev });
    await store.close();
    budget(
      "`stet list` on a store of 1,000 runs",
      await walls(dir, () => ["list", "--store", db]),
      200,
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Samples per second of 10,000 instant samples on fresh stores that `open` makes. */
async function rate(concurrency, open) {
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

const perSecondFmt = (r) => `${Math.round(r).toLocaleString()}/s`;

async function throughput(concurrency) {
  const figures = await rate(concurrency, async () => {
    const dir = mkdtempSync(join(tmpdir(), "stet-bench-"));
    const store = openSqliteStore(join(dir, "stet.db"));
    return { store, dispose: () => rmSync(dir, { recursive: true, force: true }) };
  });
  report(
    `10,000 samples, instant solver, durable SQLite, concurrency ${concurrency} (in-process)`,
    `${spread(figures, perSecondFmt)} samples`,
    "≥ 10,000/s",
    median(figures) >= 10_000,
  );
}

const POSTGRES = process.env.STET_BENCH_POSTGRES ?? "postgres://postgres@127.0.0.1:5432/test";

async function postgres(concurrency) {
  const probe = openPostgresStore(POSTGRES, { schema: "stet_bench_probe" });
  const reachable = await probe.reads.listRuns({ limit: 1 }).then(
    () => true,
    () => false,
  );
  await probe.close();
  if (!reachable) {
    console.log(`- PostgreSQL at ${POSTGRES} does not answer; skipping the postgres group`);
    return;
  }
  await dropSchema("stet_bench_probe");
  const figures = await rate(concurrency, async () => {
    const schema = `stet_bench_${process.pid}_${Math.floor(Math.random() * 1e9)}`;
    return {
      store: openPostgresStore(POSTGRES, { schema }),
      dispose: () => dropSchema(schema),
    };
  });
  report(
    `10,000 samples, instant solver, PostgreSQL store (loopback), concurrency ${concurrency} (in-process)`,
    `${spread(figures, perSecondFmt)} samples`,
    "—",
    true,
  );
}

/** An agent of `steps` ctx.step calls per sample, each taking `stepMs`; journaled unless told. */
function agentEval(n, steps, stepMs, concurrency, journal) {
  const dataset = Array.from({ length: n }, (_, i) => ({ id: `s${i}`, input: `task ${i}` }));
  const ev = defineEval({
    name: "bench-agent",
    dataset,
    solver: async (sample, ctx) => {
      let last = null;
      for (let i = 0; i < steps; i++) {
        last = await ctx.step("tool", { i, last }, async () => {
          if (stepMs > 0) await new Promise((r) => setTimeout(r, stepMs));
          return `${sample.id}:${i}`;
        });
      }
      return last;
    },
    scorers: [scorers.custom("done", () => 1)],
    concurrency,
    journal,
  });
  return resolveEval(ev, { baseDir: process.cwd() });
}

/** Wall times (ms) of `reps` runs of `ev` on fresh stores that `open` makes. */
async function agentWalls(ev, open) {
  const walls = [];
  for (let i = 0; i < reps; i++) {
    const { store, dispose } = await open();
    const t0 = performance.now();
    await runEval({ store, eval: ev });
    walls.push(performance.now() - t0);
    await store.close();
    await dispose();
  }
  return walls;
}

/**
 * The step journal's cost: steps/s of instant steps with and without it (SQLite, PostgreSQL),
 * the time a journaled step adds, and the added wall time of an agent whose steps take 20 ms.
 */
async function journalGroup() {
  const sqlite = async () => {
    const dir = mkdtempSync(join(tmpdir(), "stet-bench-"));
    const store = openSqliteStore(join(dir, "stet.db"));
    return { store, dispose: () => rmSync(dir, { recursive: true, force: true }) };
  };
  const pgReachable = await (async () => {
    const probe = openPostgresStore(POSTGRES, { schema: "stet_bench_probe" });
    const ok = await probe.reads.listRuns({ limit: 1 }).then(
      () => true,
      () => false,
    );
    await probe.close();
    if (ok) await dropSchema("stet_bench_probe");
    return ok;
  })();
  const postgresStore = async () => {
    const schema = `stet_bench_${process.pid}_${Math.floor(Math.random() * 1e9)}`;
    return { store: openPostgresStore(POSTGRES, { schema }), dispose: () => dropSchema(schema) };
  };
  const [n, steps, concurrency] = [500, 10, 16];
  const stores = [["SQLite", sqlite], ...(pgReachable ? [["PostgreSQL", postgresStore]] : [])];
  for (const [label, open] of stores) {
    const on = await agentWalls(await agentEval(n, steps, 0, concurrency, true), open);
    const off = await agentWalls(await agentEval(n, steps, 0, concurrency, false), open);
    const stepsPerSec = (ws) => (n * steps) / (median(ws) / 1000);
    report(
      `${n} samples × ${steps} instant ctx.step, ${label}, concurrency ${concurrency}: journaled`,
      `${perSecondFmt(stepsPerSec(on))} steps (unjournaled ${perSecondFmt(stepsPerSec(off))})`,
      "—",
      true,
    );
    // A worker runs its steps one after another: n × steps / concurrency of them in sequence.
    const added = (median(on) - median(off)) / ((n * steps) / concurrency);
    report(
      `time a journaled step adds against a 0 ms step, ${label}`,
      `${added.toFixed(2)} ms per step`,
      "—",
      true,
    );
  }
  if (!pgReachable)
    console.log(`- PostgreSQL at ${POSTGRES} does not answer; journal figures on SQLite only`);
  const [an, asteps] = [96, 8];
  const on = await agentWalls(await agentEval(an, asteps, 20, concurrency, true), sqlite);
  const off = await agentWalls(await agentEval(an, asteps, 20, concurrency, false), sqlite);
  const overhead = median(on) / median(off) - 1;
  report(
    `${an} samples × ${asteps} steps of 20 ms, SQLite, concurrency ${concurrency}: wall added by the journal`,
    `${(overhead * 100).toFixed(1)} % (${fmt(median(on))} against ${fmt(median(off))})`,
    "≤ 5 %",
    overhead <= 0.05,
  );
}

async function dropSchema(schema) {
  const { default: pg } = await import("pg");
  const client = new pg.Client({ connectionString: POSTGRES });
  await client.connect();
  await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  await client.end();
}

/**
 * The floor under the chat figures: a fresh Node process that sends the same requests over a
 * keep-alive agent at the same concurrency and does nothing else (no store, no scoring).
 */
const BARE_CLIENT = `${BARE_POST}
const n = Number(process.env.N);
let next = 0;
const t0 = performance.now();
await Promise.all(Array.from({ length: Number(process.env.C) }, async () => {
  while (next < n) await post("question " + next++);
}));
process.stdout.write(String(performance.now() - t0));
process.exit(0);
`;

/** Runs the bare client: its wall time (spawn to exit) and its requests' own span (`phaseMs`). */
function bareClient(env) {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const child = spawn(process.execPath, ["--input-type=module", "-e", BARE_CLIENT], {
      env: { ...process.env, ...env },
      stdio: ["ignore", "pipe", "ignore"],
    });
    let stdout = "";
    child.stdout.on("data", (d) => (stdout += d));
    child.on("close", (code) =>
      code === 0
        ? resolve({ wallMs: performance.now() - t0, phaseMs: Number(stdout) })
        : reject(new Error(`bare client exited ${code}`)),
    );
  });
}

async function chat(n, latencyMs, concurrency, label, target, check, { raw = false } = {}) {
  const mock = await mockModel(latencyMs);
  const dir = project({
    "eval.mjs": chatEval(concurrency),
    "raw.mjs": rawRequestEval(concurrency),
    "data.jsonl": jsonl(n),
  });
  const walls = [];
  const phases = [];
  const floors = [];
  const floorPhases = [];
  const rawPhases = [];
  try {
    for (let i = 0; i < reps; i++) {
      const args = ["run", "eval.mjs", "--json", "--store", join(dir, `s${i}.db`)];
      const { wallMs, stdout } = await cli(args, dir, { MOCK_URL: mock.url });
      walls.push(wallMs);
      phases.push(JSON.parse(stdout).wallMs);
      const bare = await bareClient({ MOCK_URL: mock.url, N: String(n), C: String(concurrency) });
      floors.push(bare.wallMs);
      floorPhases.push(bare.phaseMs);
      if (!raw) continue;
      const rawArgs = ["run", "raw.mjs", "--json", "--store", join(dir, `r${i}.db`)];
      rawPhases.push(JSON.parse((await cli(rawArgs, dir, { MOCK_URL: mock.url })).stdout).wallMs);
    }
  } finally {
    mock.close();
    rmSync(dir, { recursive: true, force: true });
  }
  const wall = median(walls);
  const floor = median(floors);
  report(label, check.figure(walls), target, check.ok(wall));
  report(
    "  the floor: a bare Node client sending the same requests (fresh process, nothing else)",
    `${spread(floors)}; stet adds ${Math.round(wall - floor)} ms (${(wall / floor).toFixed(2)} × the floor)`,
    "—",
    true,
  );
  return { phases, floorPhases, rawPhases };
}

/**
 * The latency-bound eval phase: from the run's start to its report (the summary's wallMs, no
 * process start-up), against the ideal (n / concurrency round trips of latencyMs) and against the
 * bare client's own span of the same requests, measured in the same repetitions.
 */
function latencyBound({ phases, floorPhases, rawPhases }, idealMs) {
  const ratios = phases.map((p) => p / idealMs);
  const toBare = phases.map((p, i) => p / floorPhases[i]);
  const ratio = (r) => `${r.toFixed(3)} ×`;
  report(
    `  its eval phase (run start to report, no start-up): ${spread(phases)}`,
    `${spread(ratios, ratio)} the ideal ${fmt(idealMs)}`,
    "≤ 1.03 × ideal",
    median(ratios) <= 1.03,
  );
  report(
    `  the bare client's own span of the same requests: ${spread(floorPhases)}`,
    `stet's eval phase is ${spread(toBare, ratio)} it`,
    "≤ 1.01 × (no slower, within noise)",
    median(toBare) <= 1.01,
  );
  report(
    "  the engine's floor: a stet run whose solver sends the bare client's request, unjournaled",
    `its eval phase ${spread(rawPhases)}: ${spread(
      rawPhases.map((p) => p / idealMs),
      (r) => `${r.toFixed(3)} ×`,
    )} the ideal`,
    "—",
    true,
  );
}

async function large() {
  const dir = project({ "eval.mjs": instantEval, "data.jsonl": jsonl(100_000) });
  try {
    const run = await cli(["run", "eval.mjs", "--json"], dir);
    const runId = JSON.parse(run.stdout).runId;
    report(
      "peak RSS running 100,000 samples (CLI)",
      `${Math.round(run.rssKb / 1024)} MB (wall ${fmt(run.wallMs)})`,
      "< 250 MB",
      run.rssKb / 1024 < 250,
    );

    const plans = [];
    const store = openSqliteStore(join(dir, ".stet/stet.db"));
    const ev = await instant(100_000, 16);
    for (let i = 0; i < reps; i++) {
      const t0 = performance.now();
      const r = await resumeRun({ store, runId, eval: ev });
      plans.push(performance.now() - t0);
      if (r.plan.toExecute !== 0) throw new Error("the complete run had work left");
    }
    await store.close();
    report(
      "plan the resume of a complete 100,000-sample run (in-process, dataset in memory)",
      spread(plans),
      "< 2 s",
      median(plans) < 2_000,
    );
    const resumes = [];
    for (let i = 0; i < reps; i++) resumes.push((await cli(["resume", runId], dir)).wallMs);
    report(
      "`stet resume` of that run, end to end (start-up, dataset read, plan, report)",
      spread(resumes),
      "—",
      true,
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** 10,000 samples of about 1 KB of text each (input, target, output); every tenth answer wrong. */
const reportEval = `
import { defineEval, scorers } from "stet";
export default defineEval({
  name: "bench-report",
  dataset: "./data.jsonl",
  solver: (sample) => (sample.id.endsWith("3") ? "wrong " : "") + sample.target,
  scorers: [scorers.exact()],
  concurrency: 16,
});
`;

/**
 * `stet export --format html` of a 10,000-sample run: the file's size, the export's wall time,
 * and how long Chromium takes from navigation to the samples table drawn (the page's script has
 * parsed the rows, filtered, sorted and drawn the first page) and the chart present.
 */
async function reportGroup() {
  const filler = "lorem ipsum dolor sit amet ".repeat(14);
  let data = "";
  for (let i = 0; i < 10_000; i++) {
    const input = `question ${i}: ${filler}`;
    data += `${JSON.stringify({ id: `s${String(i).padStart(5, "0")}`, input, target: `answer ${i} ${filler.slice(0, 120)}` })}\n`;
  }
  const dir = project({ "eval.mjs": reportEval, "data.jsonl": data });
  const { chromium } = await import("playwright-core");
  const browser = await chromium.launch({
    executablePath: process.env.STET_CHROMIUM || "/usr/bin/chromium",
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"],
  });
  try {
    const run = await cli(["run", "eval.mjs", "--json"], dir);
    const runId = JSON.parse(run.stdout).runId;
    const file = join(dir, "report.html");
    const exports = [];
    for (let i = 0; i < reps; i++)
      exports.push((await cli(["export", runId, "--format", "html", "-o", file], dir)).wallMs);
    const mb = statSync(file).size / 1024 / 1024;
    report(
      "HTML report of 10,000 samples (~1 KB text each): file size",
      `${mb.toFixed(1)} MB`,
      "< 20 MB",
      mb < 20,
    );
    report(
      "`stet export --format html` of that run (CLI, incl. start-up)",
      spread(exports),
      "—",
      true,
    );
    const opens = [];
    for (let i = 0; i < reps; i++) {
      const page = await browser.newPage();
      const t0 = performance.now();
      await page.goto(`file://${file}`);
      await page.waitForSelector("table.samples tbody tr");
      await page.waitForSelector("svg.score-chart rect");
      opens.push(performance.now() - t0);
      await page.close();
    }
    report(
      "open that report in Chromium until table and chart are drawn",
      spread(opens),
      "< 2 s",
      median(opens) < 2_000,
    );
  } finally {
    await browser.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * Sandboxed executions per second of a trivial program (`/usr/bin/true`): the overhead of one
 * bubblewrap sandbox (namespaces, mounts, prlimit) per execution, sequentially and with one
 * execution per core at once; skipped when bwrap is missing.
 */
async function sandbox() {
  const box = createSandbox({ kind: "bubblewrap" });
  try {
    await box.check();
  } catch (error) {
    console.log(`- sandbox: skipped (${error.message.split(". ")[0]})`);
    return;
  }
  const { availableParallelism } = await import("node:os");
  const n = quick ? 50 : 200;
  for (const concurrency of [1, availableParallelism()]) {
    const rates = [];
    for (let r = 0; r < reps; r++) {
      let next = 0;
      const started = performance.now();
      await Promise.all(
        Array.from({ length: concurrency }, async () => {
          while (next++ < n) {
            const result = await box.exec({ command: ["/usr/bin/true"] });
            if (result.exitCode !== 0) throw new Error(`sandboxed true failed: ${result.stderr}`);
          }
        }),
      );
      rates.push((n / (performance.now() - started)) * 1000);
    }
    report(
      `sandboxed executions of /usr/bin/true (bubblewrap), concurrency ${concurrency}`,
      `${spread(rates, (x) => `${Math.round(x)}/s`)} = ${(1000 / median(rates)).toFixed(1)} ms each`,
      "—",
      true,
    );
  }
  const python = [];
  for (let r = 0; r < Math.min(reps, 3); r++) {
    const started = performance.now();
    await box.exec({ command: ["python3", "-c", "pass"] });
    python.push(performance.now() - started);
  }
  report(
    "one sandboxed `python3 -c pass`",
    spread(python, (x) => `${Math.round(x)} ms`),
    "—",
    true,
  );

  // How soon an execution returns when its program will not: spinning for ever (killed at its
  // 1.5 s wall-time limit), and exiting while daemons it started sleep on with its stdout.
  const lasting = async (command, stdin, timeoutMs) => {
    const figures = [];
    for (let r = 0; r < Math.min(reps, 3); r++) {
      const started = performance.now();
      await box.exec({ command, ...(stdin ? { stdin } : {}), limits: { timeoutMs } });
      figures.push(performance.now() - started);
    }
    return figures;
  };
  const spinning = await lasting(["python3", "-c", "while True: pass"], undefined, 1_500);
  report(
    "a sandboxed program spinning for ever, wall-time limit 1.5 s: the execution returns after",
    spread(spinning),
    "≤ 2.50 s",
    median(spinning) <= 2_500,
  );
  const daemons = await lasting(
    ["python3", "-"],
    "import subprocess, sys\n" +
      'subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"], start_new_session=True)\n',
    60_000,
  );
  report(
    "a sandboxed program that exits leaving a daemon asleep on its stdout: the execution returns after",
    spread(daemons),
    "≤ 1.00 s",
    median(daemons) <= 1_000,
  );
}

/**
 * How soon stet gives a verdict where waiting is the failure: a run against a broken endpoint
 * (nothing listening; a 401 for everything) stops after its first samples and exits 1; a frozen
 * owner's run is taken over once its heartbeat is past the stale limit (3 s). These were wall-
 * clock bounds in the tests, which now assert the behaviour (counts, states) alone.
 */
async function recovery() {
  const n = 200;
  const dir = project({ "eval.mjs": chatEval(4), "data.jsonl": jsonl(n) });
  try {
    const refused = await closedPortUrl();
    const unauthorized = await rejectingModel(401);
    try {
      for (const [what, url, targetMs] of [
        ["nothing listening", refused, 2_000],
        ["401 to everything", unauthorized.url, 2_000],
      ]) {
        const figures = [];
        for (let r = 0; r < reps; r++) {
          const run = await cli(
            ["run", "eval.mjs", "--store", join(dir, `endpoint-${figures.length}-${r}.db`)],
            dir,
            { MOCK_URL: url },
            1,
          );
          figures.push(run.wallMs);
        }
        report(
          `a broken endpoint (${what}), ${n} chat samples: stet run to its exit 1 (CLI, incl. start-up)`,
          spread(figures),
          `≤ ${fmt(targetMs)}`,
          median(figures) <= targetMs,
        );
      }
    } finally {
      unauthorized.close();
    }
    await takeover(dir);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * A frozen owner taken over: `stet run` of 200 samples of 20 ms is stopped (SIGSTOP) once 20
 * are committed; a `stet resume` started when its heartbeat is past the stale limit (3 s) takes
 * the run over, watching it for twice the heartbeat interval first, and finishes it. The figure
 * is from the stale limit to the resume's exit.
 */
async function takeover(dir) {
  const stale = 3_000;
  const env = { STET_STALE_MS: String(stale) };
  writeFileSync(join(dir, "slow.mjs"), slowEval);
  const figures = [];
  for (let r = 0; r < reps; r++) {
    const store = join(dir, `takeover-${r}.db`);
    const owner = spawn(process.execPath, [BIN, "run", "slow.mjs", "--store", store], {
      cwd: dir,
      env: { ...process.env, ...env },
      stdio: "ignore",
    });
    try {
      while (committed(store) < 20) await new Promise((r) => setTimeout(r, 10));
      owner.kill("SIGSTOP");
      const frozenAt = performance.now();
      await new Promise((r) => setTimeout(r, stale));
      const runId = runIdOf(store);
      await cli(["resume", runId, "--store", store], dir, env);
      figures.push(performance.now() - frozenAt - stale);
    } finally {
      owner.kill("SIGKILL");
      owner.kill("SIGCONT");
    }
  }
  report(
    "a frozen owner's run taken over (stale limit 3 s): from the limit to the resume's exit, the rest of 200 × 20 ms samples included",
    spread(figures),
    "≤ 15.00 s",
    median(figures) <= 15_000,
  );
}

const slowEval = `
import { defineEval, scorers } from "stet";
export default defineEval({
  name: "bench-slow",
  dataset: "./data.jsonl",
  solver: async (sample) => {
    await new Promise((r) => setTimeout(r, 20));
    return sample.input;
  },
  scorers: [scorers.exact()],
  concurrency: 4,
});
`;

/** Attempts committed in the SQLite store at `path` so far (0 before it has its tables). */
function committed(path) {
  try {
    const db = new Database(path, { readonly: true, fileMustExist: true });
    try {
      return db.prepare("SELECT COUNT(*) AS n FROM attempts").get().n;
    } finally {
      db.close();
    }
  } catch {
    return 0;
  }
}

/** The one run's id in the SQLite store at `path`. */
function runIdOf(path) {
  const db = new Database(path, { readonly: true, fileMustExist: true });
  try {
    return db.prepare("SELECT id FROM runs").get().id;
  } finally {
    db.close();
  }
}

/** A base URL on loopback where nothing listens (a port bound, then released). */
async function closedPortUrl() {
  const server = createServer();
  await new Promise((r) => server.listen(0, "127.0.0.1", r));
  const { port } = server.address();
  await new Promise((r) => server.close(r));
  return `http://127.0.0.1:${port}/v1`;
}

/** A chat-completions server on loopback answering every request with `status`. */
async function rejectingModel(status) {
  const server = createServer((req, res) => {
    req.resume();
    req.on("end", () =>
      res
        .writeHead(status, { "content-type": "application/json" })
        .end(
          JSON.stringify({ error: { message: `mock ${status}`, type: "invalid_request_error" } }),
        ),
    );
  });
  await new Promise((r) => server.listen(0, "127.0.0.1", r));
  return { url: `http://127.0.0.1:${server.address().port}/v1`, close: () => server.close() };
}

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
async function workersGroup() {
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

/** Whether the PostgreSQL at POSTGRES answers. */
async function postgresAnswers() {
  const probe = openPostgresStore(POSTGRES, { schema: "stet_bench_probe" });
  const ok = await probe.reads.listRuns({ limit: 1 }).then(
    () => true,
    () => false,
  );
  await probe.close();
  if (ok) await dropSchema("stet_bench_probe");
  return ok;
}

console.log(`stet benchmarks on ${process.version}, ${reps} repetition(s) each, medians\n`);
if (runs("startup")) await startup();
if (runs("throughput")) {
  await throughput(16);
  await throughput(64);
}
if (runs("chat")) {
  await chat(
    2_000,
    0,
    50,
    "2,000 chat samples, mock answering in 0 ms, concurrency 50 (CLI, incl. start-up)",
    "< 2 s",
    {
      figure: (ws) => spread(ws),
      ok: (w) => w < 2_000,
    },
  );
  const bound = await chat(
    200,
    200,
    20,
    "200 chat samples × 200 ms latency, concurrency 20 (CLI, incl. start-up; ideal 2.00 s)",
    "≤ 1.1 × ideal",
    {
      figure: (ws) => `${spread(ws)} = ${(median(ws) / 2_000).toFixed(2)} × ideal`,
      ok: (w) => w <= 2_200,
    },
    { raw: true },
  );
  latencyBound(bound, 2_000);
}
if (runs("large")) await large();
if (runs("postgres")) {
  await postgres(16);
  await postgres(64);
}
if (runs("journal")) await journalGroup();
if (runs("sandbox")) await sandbox();
if (runs("report")) await reportGroup();
if (runs("workers")) await workersGroup();
if (runs("recovery")) await recovery();
const failed = rows.filter((r) => !r.ok).length;
console.log(`\n${rows.length - failed} of ${rows.length} figures within target`);
