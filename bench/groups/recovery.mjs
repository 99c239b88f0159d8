// The recovery group: how soon stet gives a verdict where waiting is the failure.
import { spawn } from "node:child_process";
import { rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import { join } from "node:path";
import Database from "better-sqlite3";
import {
  BIN,
  chatEval,
  cli,
  fmt,
  jsonl,
  median,
  project,
  report,
  reps,
  spread,
} from "../harness.mjs";

/**
 * How soon stet gives a verdict where waiting is the failure: a run against a broken endpoint
 * (nothing listening; a 401 for everything) stops after its first samples and exits 1; a frozen
 * owner's run is taken over once its heartbeat is past the stale limit (3 s). These were wall-
 * clock bounds in the tests, which now assert the behaviour (counts, states) alone.
 */
export default async function recovery() {
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
