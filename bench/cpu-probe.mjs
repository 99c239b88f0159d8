// A process of its own that measures the main thread's CPU per sample of one run, for the cpu
// group (bench/groups/cpu.mjs). The mock model answers from the bench's process, so its CPU is
// not counted here.
//   node bench/cpu-probe.mjs <checkout> <chat|instant|bare> <n> <concurrency> [profile.cpuprofile]
// <checkout> is the root of a built stet (its dist/ is imported), so the same probe measures two
// builds alike. A warm-up run of n/2 samples (on a store of its own) comes first; then, of the
// measured run's runEval (its eval resolved and its store opened before), the main thread's CPU
// (/proc/thread-self/schedstat: nanoseconds on a CPU), the whole process's (process.cpuUsage)
// and the wall are printed as one JSON line. With a profile
// path, the measured run is also profiled (V8's sampling profiler, through node:inspector), which
// inflates the figures: profile and measure in separate invocations.
import { mkdtempSync, rmSync } from "node:fs";
import http from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { measureWork } from "./measure-work.mjs";

const [checkout, mode, nText, concurrencyText, profilePath] = process.argv.slice(2);
const n = Number(nText);
const concurrency = Number(concurrencyText);
const mockUrl = process.env.MOCK_URL;

/** Nanoseconds this thread has run on a CPU (Linux; the main thread's when called from it). */

const stet = await import(pathToFileURL(join(checkout, "dist/index.js")).href);
const dir = mkdtempSync(join(tmpdir(), "stet-cpu-"));

const dataset = (count, prefix) =>
  Array.from({ length: count }, (_, i) => ({
    id: `${prefix}${i}`,
    input: `question ${i}`,
    target: `question ${i}`,
  }));

/**
 * One stet run of `count` samples on a fresh durable SQLite store: the eval resolved and the store
 * opened beforehand, so that `measured` spans runEval alone.
 */
async function stetRun(count, name, measured) {
  const solver =
    mode === "chat"
      ? stet.solvers.chat({ model: "gpt-4o-mini", baseURL: mockUrl, apiKey: "sk-bench" })
      : (sample) => sample.input;
  const ev = await stet.resolveEval(
    stet.defineEval({
      name: `bench-cpu-${mode}`,
      dataset: dataset(count, name),
      solver,
      scorers: [stet.scorers.exact()],
      concurrency,
    }),
    { baseDir: dir },
  );
  const store = stet.openSqliteStore(join(dir, `${name}.db`));
  try {
    const report = await measured(() => stet.runEval({ store, eval: ev }));
    if (report.counts.scored !== count)
      throw new Error(`${report.counts.scored} of ${count} samples scored`);
  } finally {
    await store.close();
  }
}

/** The floor: the same requests through node:http with a keep-alive agent, nothing else. */
async function bareRun(count, measured) {
  const agent = new http.Agent({ keepAlive: true });
  const url = new URL(`${mockUrl}/chat/completions`);
  const post = (content) =>
    new Promise((resolve, reject) => {
      const body = JSON.stringify({ model: "gpt-4o-mini", messages: [{ role: "user", content }] });
      const headers = { "content-type": "application/json", authorization: "Bearer sk-bench" };
      const req = http.request(url, { method: "POST", agent, headers }, (res) => {
        let text = "";
        res.on("data", (d) => (text += d));
        res.on("end", () => resolve(JSON.parse(text)));
      });
      req.on("error", reject);
      req.end(body);
    });
  let next = 0;
  await measured(() =>
    Promise.all(
      Array.from({ length: concurrency }, async () => {
        while (next < count) await post(`question ${next++}`);
      }),
    ),
  );
  agent.destroy();
}

const run = (count, name, measured) =>
  mode === "bare" ? bareRun(count, measured) : stetRun(count, name, measured);

/** Runs `work` measured: the main thread's CPU, the process's, the wall; profiled when asked. */
async function measure(work) {
  const { result, wallMs, threadUs, cpu } = await measureWork(work, profilePath);
  figures = {
    mode,
    n,
    concurrency,
    wallMs,
    mainUsPerSample: threadUs / n,
    processUsPerSample: (cpu.user + cpu.system) / n,
  };
  return result;
}

let figures;
try {
  await run(Math.max(1, Math.floor(n / 2)), "w", (work) => work());
  await run(n, "m", measure);
  process.stdout.write(JSON.stringify(figures) + "\n");
} finally {
  rmSync(dir, { recursive: true, force: true });
}
