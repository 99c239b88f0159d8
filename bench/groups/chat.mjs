// The chat group: chat samples against a mock model, against a bare client's floor and the
// latency-bound ideal.
import { spawn } from "node:child_process";
import { rmSync } from "node:fs";
import { join } from "node:path";
import {
  chatEval,
  cli,
  fmt,
  jsonl,
  median,
  mockModel,
  project,
  report,
  reps,
  spread,
} from "../harness.mjs";

/** 2,000 chat samples at 0 ms, and 200 at 200 ms with the latency-bound eval phase. */
export default async function chatGroup() {
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
