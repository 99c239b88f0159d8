import { spawn } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { createApp } from "../src/server/create-app.js";
import { openSqliteStore } from "../src/store/sqlite/index.js";
import { runCli, startCli, STET_BIN, type CliResult } from "./helpers/cli.js";
import { evalProject, questions, rawAttempts, rawRun } from "./helpers/eval-project.js";
import { until, solverCalls } from "./helpers/wait.js";

/**
 * Issue 11 end to end through the real CLI: the resume command printed after Ctrl-C works as
 * printed for a run on a custom store (by --store and by STET_STORE), a solver's own error
 * message reaches the screen, and a SIGKILLed run reads as interrupted through the API.
 */

/** A function solver that sleeps; samples whose number is in `failing` throw "tool failed". */
const evalFile = (sleepMs: number, failing: readonly number[] = []) => `
import { appendFileSync } from "node:fs";
import { defineEval, scorers } from "stet";
const failing = new Set(${JSON.stringify(failing.map((n) => `q${String(n).padStart(3, "0")}`))});
export default defineEval({
  name: "hints",
  dataset: "./data.jsonl",
  solver: async (sample, ctx) => {
    appendFileSync(new URL("./calls.log", import.meta.url), sample.id + "#" + ctx.epoch + "\\n");
    await new Promise((r) => setTimeout(r, ${sleepMs}));
    if (failing.has(sample.id)) throw new Error("tool failed");
    return String(sample.input).replace("question", "answer");
  },
  scorers: [scorers.exact()],
  concurrency: 4,
});
`;

const projects: { cleanup: () => void }[] = [];
afterEach(() => projects.splice(0).forEach((p) => p.cleanup()));
function project(files: Record<string, string>) {
  const p = evalProject(files);
  projects.push(p);
  // `stet` on PATH, as a user has it: the printed command is run by a shell exactly as printed.
  const bin = join(p.dir, "bin");
  mkdirSync(bin);
  writeFileSync(join(bin, "stet"), `#!/bin/sh\nexec "${process.execPath}" "${STET_BIN}" "$@"\n`);
  chmodSync(join(bin, "stet"), 0o755);
  return { ...p, path: `${bin}:${process.env.PATH ?? ""}` };
}

const calls = solverCalls;

/** Runs one command line through `sh -c`, as a user pasting it would. */
function runShell(command: string, options: { cwd: string; env: NodeJS.ProcessEnv }) {
  return new Promise<CliResult>((resolve) => {
    const child = spawn("sh", ["-c", command], {
      cwd: options.cwd,
      env: { NO_COLOR: "1", ...options.env },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.setEncoding("utf8").on("data", (d: string) => (stdout += d));
    child.stderr.setEncoding("utf8").on("data", (d: string) => (stderr += d));
    child.on("close", (code, signal) => resolve({ code, signal, stdout, stderr }));
  });
}

/** The environment without STET_STORE: a fresh shell that knows only what the hint says. */
function envWithout(name: string, extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  const env = { ...process.env, ...extra };
  delete env[name];
  return env;
}

/** Starts a 40-sample run, interrupts it with SIGINT once some samples are committed. */
async function interruptedRun(
  p: ReturnType<typeof project>,
  db: string,
  args: readonly string[],
  env: NodeJS.ProcessEnv,
) {
  const cli = startCli(["run", "eval.mjs", ...args], { cwd: p.dir, env });
  const runId = (await cli.waitFor(/^run (r_\w+)/m))[1]!;
  await until(() => existsSync(db) && rawAttempts(db).length > 0, "a committed attempt");
  cli.child.kill("SIGINT");
  const result = await cli.done;
  expect(result.code, result.stderr).toBe(130);
  const hint = result.stderr.match(/keys left\. Resume with: (.+)$/m);
  expect(hint, result.stderr).not.toBeNull();
  return { runId, command: hint![1]!, stored: rawAttempts(db).length };
}

describe("the resume command printed after Ctrl-C works as printed", () => {
  it("for a run on --store <a path with spaces and a quote>", async () => {
    const p = project({ "eval.mjs": evalFile(100), "data.jsonl": questions(40) });
    const db = join(p.dir, "my evals", "it's here.db");
    const { runId, command, stored } = await interruptedRun(p, db, ["--store", db], {});
    expect(command).toBe(`stet resume ${runId} --store '${db.replace("'", `'\\''`)}'`);
    expect(rawRun(db, runId)).toMatchObject({ status: "interrupted" });
    expect(existsSync(p.db)).toBe(false);

    const resumed = await runShell(command, {
      cwd: p.dir,
      env: envWithout("STET_STORE", { PATH: p.path }),
    });
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(resumed.stdout).toContain(`plan: ${stored} preserved · ${40 - stored} to execute`);
    expect(rawRun(db, runId)).toMatchObject({ status: "completed" });
    expect(rawAttempts(db)).toHaveLength(40);
    expect(calls(p.dir)).toHaveLength(40);
    // It resumed the run on that store, not a new one on the default store.
    expect(existsSync(p.db)).toBe(false);
  });

  it("for a run on STET_STORE, from a shell where STET_STORE is not set", async () => {
    const p = project({ "eval.mjs": evalFile(100), "data.jsonl": questions(40) });
    const db = join(p.dir, "env store", "s.db");
    const { runId, command, stored } = await interruptedRun(p, db, [], { STET_STORE: db });
    expect(command).toBe(`stet resume ${runId} --store '${db}'`);

    const resumed = await runShell(command, {
      cwd: p.dir,
      env: envWithout("STET_STORE", { PATH: p.path }),
    });
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(resumed.stdout).toContain(`plan: ${stored} preserved · ${40 - stored} to execute`);
    expect(rawRun(db, runId)).toMatchObject({ status: "completed" });
    expect(rawAttempts(db)).toHaveLength(40);
    expect(existsSync(p.db)).toBe(false);
  });
});

describe("a solver's own error reaches the screen", () => {
  it("in the summary and in stet show, by type with the first sample ids, and as data", async () => {
    const failing = [1, 4, 7, 8, 9];
    const p = project({ "eval.mjs": evalFile(1, failing), "data.jsonl": questions(10) });
    const db = join(p.dir, "store.db");
    const run = await runCli(["run", "eval.mjs", "--store", db], { cwd: p.dir });
    expect(run.code, run.stderr).toBe(3);
    const runId = run.stdout.match(/^run (r_\w+)/)![1]!;
    const line =
      "errors   solver 5 — q001: tool failed; q004: tool failed; q007: tool failed; … and 2 more";
    expect(run.stdout).toContain(`\n${line}\n`);
    expect(run.stderr).toContain(
      `5 keys ended in error. Re-run them with: stet resume ${runId} --store ${db}\n`,
    );

    const show = await runCli(["show", runId, "--store", db], { cwd: p.dir });
    expect(show.code, show.stderr).toBe(0);
    expect(show.stdout).toContain(`\n${line}\n`);
    expect(show.stdout).toContain(`\nresume   stet resume ${runId} --store ${db}\n`);
    // The message, never the stack it was thrown with.
    for (const out of [run.stdout, run.stderr, show.stdout])
      expect(out).not.toMatch(/eval\.mjs:\d/);

    const json = await runCli(["show", runId, "--store", db, "--json"], { cwd: p.dir });
    const detail = JSON.parse(json.stdout) as Record<string, unknown>;
    expect(detail.errorsByType).toEqual({ solver: 5 });
    expect(detail.errors).toEqual([
      {
        type: "solver",
        count: 5,
        examples: ["q001", "q004", "q007"].map((sampleId) => ({
          sampleId,
          epoch: 1,
          message: "tool failed",
        })),
      },
    ]);
  });
});

describe("a SIGKILLed run read through the API", () => {
  it("GET /api/runs/:id says interrupted and orphaned, and the store is left as it was", async () => {
    const p = project({ "eval.mjs": evalFile(200), "data.jsonl": questions(40) });
    const db = join(p.dir, "store.db");
    const owner = startCli(["run", "eval.mjs", "--store", db], { cwd: p.dir });
    const runId = (await owner.waitFor(/^run (r_\w+)/m))[1]!;
    await until(() => existsSync(db) && rawAttempts(db).length > 0, "a committed attempt");
    owner.child.kill("SIGKILL");
    await owner.done;
    expect(rawRun(db, runId)).toMatchObject({ status: "running", owner_pid: owner.child.pid });

    // The app alone, without serve's orphan sweep: what a read sees, derived without writing.
    const store = openSqliteStore(db);
    try {
      const app = createApp({ store });
      const detail = (await (await app.request(`/api/runs/${runId}`)).json()) as object;
      expect(detail).toMatchObject({
        id: runId,
        status: "interrupted",
        orphaned: true,
        owner: { pid: owner.child.pid, alive: false, reason: `pid ${owner.child.pid} is gone` },
      });
      const list = (await (await app.request("/api/runs")).json()) as { runs: object[] };
      expect(list.runs).toEqual([
        expect.objectContaining({ id: runId, status: "interrupted", orphaned: true }),
      ]);
    } finally {
      await store.close();
    }
    expect(rawRun(db, runId)).toMatchObject({ status: "running", owner_pid: owner.child.pid });

    // stet list recovers it on read: listed as interrupted, and so it stays.
    const listed = await runCli(["list", "--json", "--store", db], { cwd: p.dir });
    expect(JSON.parse(listed.stdout)).toEqual([
      expect.objectContaining({ id: runId, status: "interrupted" }),
    ]);
    expect(rawRun(db, runId)).toMatchObject({ status: "interrupted", owner_pid: null });

    // stet show prints the command that finishes it.
    const show = await runCli(["show", runId, "--store", db], { cwd: p.dir });
    expect(show.stdout).toContain(`run ${runId} · hints · interrupted`);
    const command = show.stdout.match(/^resume {3}(.+)$/m)![1]!;
    expect(command).toBe(`stet resume ${runId} --store ${db}`);
    const resumed = await runShell(command, {
      cwd: p.dir,
      env: envWithout("STET_STORE", { PATH: p.path }),
    });
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(rawAttempts(db)).toHaveLength(40);
  });
});
