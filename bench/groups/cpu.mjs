// The cpu group: main-thread CPU per sample of the chat path and of the instant path, each run in
// a process of its own (bench/cpu-probe.mjs) with the mock model answering from this one, and the
// floor under the chat figure: a bare node:http client sending the same requests, measured alike.
// STET_BENCH_BASELINE=<another built checkout> measures that build too, interleaved with this one
// (the order alternates each repetition), and prints the ratio of the medians.
import { spawn } from "node:child_process";
import { join } from "node:path";
import { REPO, median, mockModel, perSecondFmt, report, reps, spread } from "../harness.mjs";

const PROBE = join(REPO, "bench/cpu-probe.mjs");
const CHAT = { n: 2_000, concurrency: 50 };
const INSTANT = { n: 10_000, concurrency: 64 };

/** Runs the probe once; resolves with its JSON line. */
export function probe(checkout, mode, n, concurrency, env = {}, profile) {
  return new Promise((resolve, reject) => {
    const args = [PROBE, checkout, mode, String(n), String(concurrency)];
    const child = spawn(process.execPath, profile ? [...args, profile] : args, {
      env: { ...process.env, ...env },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d) => (stdout += d));
    child.stderr.on("data", (d) => (stderr += d));
    child.on("close", (code) =>
      code === 0
        ? resolve(JSON.parse(stdout))
        : reject(new Error(`cpu probe ${mode} exited ${code}\n${stderr}`)),
    );
  });
}

const us = (x) => `${Math.round(x)} µs`;

/** Per-sample CPU of the chat and instant paths, this build (and a baseline's) interleaved. */
export default async function cpuGroup() {
  const builds = [{ name: "this build", root: REPO }];
  const baseline = process.env.STET_BENCH_BASELINE;
  if (baseline) builds.push({ name: `baseline ${baseline}`, root: baseline });
  const mock = await mockModel(0);
  const env = { MOCK_URL: mock.url };
  const figures = new Map(builds.map((b) => [b.name, { chat: [], instant: [], rate: [] }]));
  const floor = [];
  try {
    for (let i = 0; i < reps; i++) {
      const order = i % 2 === 0 ? builds : [...builds].reverse();
      for (const build of order) {
        const f = figures.get(build.name);
        const chat = await probe(build.root, "chat", CHAT.n, CHAT.concurrency, env);
        f.chat.push(chat.mainUsPerSample);
        const instant = await probe(build.root, "instant", INSTANT.n, INSTANT.concurrency);
        f.instant.push(instant.mainUsPerSample);
        f.rate.push(INSTANT.n / (instant.wallMs / 1000));
      }
      floor.push((await probe(REPO, "bare", CHAT.n, CHAT.concurrency, env)).mainUsPerSample);
    }
  } finally {
    mock.close();
  }
  for (const build of builds) {
    const f = figures.get(build.name);
    report(
      `${build.name}: main-thread CPU per chat sample (2,000 samples, 0 ms mock in another process, concurrency 50, SQLite)`,
      spread(f.chat, us),
      "— (≤ ½ of cef559c's: see the ratio with STET_BENCH_BASELINE)",
      true,
    );
    report(
      `${build.name}: main-thread CPU per instant sample (10,000 samples, durable SQLite, concurrency 64)`,
      `${spread(f.instant, us)}; ${spread(f.rate, perSecondFmt)} samples`,
      "≥ 45,000/s",
      median(f.rate) >= 45_000,
    );
  }
  report(
    "  the floor: a bare node:http client sending the same 2,000 requests, measured alike",
    spread(floor, us),
    "—",
    true,
  );
  if (builds.length === 2) {
    const [now, base] = builds.map((b) => figures.get(b.name));
    const ratio = (k) => (median(now[k]) / median(base[k])).toFixed(2);
    report(
      "  this build ÷ baseline, medians: chat CPU / instant CPU / instant samples/s",
      `${ratio("chat")} / ${ratio("instant")} / ${ratio("rate")}`,
      "chat ≤ 0.50",
      median(now.chat) <= median(base.chat) / 2,
    );
  }
}
