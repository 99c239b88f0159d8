import { spawnSync } from "node:child_process";
import { existsSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { openSqliteStore } from "../src/store/sqlite/index.js";
import { runCli, startCli, STET_BIN } from "./helpers/cli.js";
import { evalProject, questions, rawAttempts, rawRun } from "./helpers/eval-project.js";
import { until, solverCalls } from "./helpers/wait.js";

/** A function solver that sleeps, logging each call to calls.log so tests can count executions. */
const evalFile = (sleepMs: number, extra = "") => `
import { appendFileSync } from "node:fs";
import { defineEval, scorers } from "stet";
export default defineEval({
  name: "sleepy",
  dataset: "./data.jsonl",
  solver: async (sample, ctx) => {
    appendFileSync(new URL("./calls.log", import.meta.url), sample.id + "#" + ctx.epoch + "\\n");
    await new Promise((r) => setTimeout(r, ${sleepMs}));
    return String(sample.input).replace("question", "answer");
  },
  scorers: [scorers.exact()],
  concurrency: 4,
  ${extra}
});
`;

/**
 * `evalFile(200)`'s eval, except that from the ninth sample on the solver waits while the project
 * has a file `hold`: the run commits some samples, then cannot finish until the test removes it.
 */
const heldEval = `
import { appendFileSync, existsSync } from "node:fs";
import { defineEval, scorers } from "stet";
const held = () => existsSync(new URL("./hold", import.meta.url));
export default defineEval({
  name: "sleepy",
  dataset: "./data.jsonl",
  solver: async (sample, ctx) => {
    appendFileSync(new URL("./calls.log", import.meta.url), sample.id + "#" + ctx.epoch + "\\n");
    await new Promise((r) => setTimeout(r, 200));
    while (sample.id >= "q008" && held()) await new Promise((r) => setTimeout(r, 20));
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
  return p;
}
const calls = solverCalls;

describe("stet run and resume", () => {
  it("runs an eval to completion: run id first, summary, exit 0, and a same-summary resume with no calls", async () => {
    const p = project({ "eval.mjs": evalFile(1), "data.jsonl": questions(10) });
    const run = await runCli(["run", "eval.mjs", "--epochs", "2"], { cwd: p.dir });
    expect(run.code, run.stderr).toBe(0);
    const runId = run.stdout.match(/^run (r_\w+)/)![1]!;
    expect(run.stdout).toMatch(/exact\s+1\.0000\s+0\.0000\s+10/);
    expect(calls(p.dir)).toHaveLength(20);

    const resumed = await runCli(["resume", runId], { cwd: p.dir });
    expect(resumed.code).toBe(0);
    expect(resumed.stdout).toContain("nothing left to execute");
    expect(calls(p.dir)).toHaveLength(20);
    const table = (out: string) => out.slice(out.indexOf("scorer"), out.indexOf("work"));
    expect(table(resumed.stdout)).toBe(table(run.stdout));

    const list = await runCli(["list", "--json"], { cwd: p.dir });
    expect(JSON.parse(list.stdout)).toEqual([
      expect.objectContaining({
        id: runId,
        eval: "sleepy",
        status: "completed",
        total: 20,
        done: 20,
        errored: 0,
      }),
    ]);
  });

  it("exits 130 on SIGINT with the run interrupted and the resume command printed; resume completes it", async () => {
    // Held, so most samples are still to run when it is interrupted, however slow the machine.
    const p = project({ "eval.mjs": heldEval, "data.jsonl": questions(40), hold: "" });
    const cli = startCli(["run", "eval.mjs"], { cwd: p.dir });
    const runId = (await cli.waitFor(/^run (r_\w+)/m))[1]!;
    // Interrupt once some samples are committed; the held ones in flight may then finish.
    await until(() => rawAttempts(p.db).length > 0, "a committed attempt");
    cli.child.kill("SIGINT");
    rmSync(join(p.dir, "hold"));
    const result = await cli.done;
    expect(result.code).toBe(130);
    expect(result.stderr).toContain(`stet resume ${runId}`);
    expect(rawRun(p.db, runId)).toMatchObject({ status: "interrupted", owner_token: null });
    const stored = rawAttempts(p.db);
    expect(stored.length).toBeGreaterThan(0);
    expect(stored.length).toBeLessThan(40);
    // The grace period let in-flight samples finish: every dispatched sample was recorded.
    expect(calls(p.dir)).toHaveLength(stored.length);

    const resumed = await runCli(["resume", runId], { cwd: p.dir });
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(resumed.stdout).toContain(
      `plan: ${stored.length} preserved · ${40 - stored.length} to execute`,
    );
    expect(calls(p.dir)).toHaveLength(40);
    expect(
      rawAttempts(p.db).filter((a) => stored.some((s) => s.sample_id === a.sample_id)),
    ).toEqual(stored);
  });

  it("refuses a second resume with exit 5 while the owner lives, and proceeds at once after it is SIGKILLed", async () => {
    // Held: the owner is still running when the second resume, however slow to start, judges.
    const p = project({ "eval.mjs": heldEval, "data.jsonl": questions(40), hold: "" });
    const owner = startCli(["run", "eval.mjs"], { cwd: p.dir });
    const runId = (await owner.waitFor(/^run (r_\w+)/m))[1]!;
    const second = await runCli(["resume", runId], { cwd: p.dir });
    expect(second.code).toBe(5);
    expect(second.stderr).toContain(`run ${runId} is being executed by pid ${owner.child.pid} on `);
    expect(second.stderr).toMatch(new RegExp(`; stet cancel ${runId} stops it\n$`));

    owner.child.kill("SIGKILL");
    await owner.done;
    const stored = rawAttempts(p.db);
    expect(stored.length).toBeLessThan(40);
    rmSync(join(p.dir, "hold"));
    // Same host, dead pid: no waiting for the heartbeat to go stale.
    const third = await runCli(["resume", runId], { cwd: p.dir });
    expect(third.code, third.stderr).toBe(0);
    expect(rawAttempts(p.db)).toHaveLength(40);
    expect(
      rawAttempts(p.db).filter((a) => stored.some((s) => s.sample_id === a.sample_id)),
    ).toEqual(stored);
  });

  it("reports a changed dataset row and refuses; --rerun-changed re-runs only its keys", async () => {
    const p = project({ "eval.mjs": evalFile(1), "data.jsonl": questions(6) });
    const run = await runCli(["run", "eval.mjs", "--output", "out.jsonl"], { cwd: p.dir });
    const runId = run.stdout.match(/^run (r_\w+)/)![1]!;
    const outLines = () => readFileSync(join(p.dir, "out.jsonl"), "utf8").split("\n").slice(0, -1);
    const before = outLines();
    expect(before).toHaveLength(6);
    const lines = questions(6).split("\n");
    lines[2] = JSON.stringify({ id: "q002", input: "question 2 (edited)", target: "answer 2" });
    writeFileSync(join(p.dir, "data.jsonl"), lines.join("\n"));
    writeFileSync(join(p.dir, "calls.log"), "");

    const refused = await runCli(["resume", runId], { cwd: p.dir });
    expect(refused.code).toBe(1);
    expect(refused.stdout).toContain("changed samples: q002");
    expect(refused.stderr).toContain("--rerun-changed");
    expect(rawAttempts(p.db)).toHaveLength(6);

    expect(outLines()).toEqual(before);

    const rerun = await runCli(["resume", runId, "--rerun-changed"], { cwd: p.dir });
    expect(rerun.code, rerun.stderr).toBe(0);
    expect(calls(p.dir).filter(Boolean)).toEqual(["q002#1"]);
    expect(rawAttempts(p.db)).toHaveLength(7);
    // The Results JSONL (remembered from the run) holds q002 once, re-run; the other lines
    // are the same bytes in the same order.
    const after = outLines();
    const isQ002 = (line: string) => JSON.parse(line).test_case_id === "q002";
    expect(after.filter((l) => !isQ002(l))).toEqual(before.filter((l) => !isQ002(l)));
    const storedAttempts = (lines: string[]) =>
      lines.filter(isQ002).map((l) => JSON.parse(l).metadata.stet.attempt);
    expect(storedAttempts(before)).toEqual([1]);
    expect(storedAttempts(after)).toEqual([2]);
  });

  it.each([
    ["0.5", 0],
    ["0.9", 4],
  ])("--fail-under %s on a run scoring 0.75 exits %i", async (bar, code) => {
    const wrongOnEveryFourth = evalFile(1).replace(
      'return String(sample.input).replace("question", "answer");',
      'return sample.id.endsWith("3") || sample.id.endsWith("7") ? "wrong" : String(sample.input).replace("question", "answer");',
    );
    const p = project({ "eval.mjs": wrongOnEveryFourth, "data.jsonl": questions(8) });
    const result = await runCli(["run", "eval.mjs", "--fail-under", bar], { cwd: p.dir });
    expect(result.stdout).toMatch(/exact\s+0\.7500/);
    expect(result.code).toBe(code);
    if (code === 4) expect(result.stderr).toContain(`below --fail-under ${bar}: exact 0.7500`);
  });

  it("exits 3 when samples end in error, and a resume re-runs only those", async () => {
    const failing = evalFile(1).replace(
      "appendFileSync(new URL",
      'if (sample.id === "q001" && !process.env.FIXED) throw new Error("flaky backend"); appendFileSync(new URL',
    );
    const p = project({ "eval.mjs": failing, "data.jsonl": questions(4) });
    const run = await runCli(["run", "eval.mjs"], { cwd: p.dir });
    expect(run.code).toBe(3);
    expect(run.stdout).toMatch(/1 errored \(solver 1\)/);
    const runId = run.stdout.match(/^run (r_\w+)/)![1]!;
    const resumed = await runCli(["resume", runId], { cwd: p.dir, env: { FIXED: "1" } });
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(resumed.stdout).toContain(
      "3 preserved · 1 to execute (0 never started, 0 interrupted, 1 errored)",
    );
    const history = rawAttempts(p.db).filter((a) => a.sample_id === "q001");
    expect(history.map((a) => a.status)).toEqual(["error", "scored"]);
  });
});

describe("bad input", () => {
  it("names the file and line of a malformed JSONL row, exits 1 and writes nothing", async () => {
    const p = project({
      "eval.mjs": evalFile(1),
      "data.jsonl": `${questions(3)}\n{"id": "q9", "input": oops}\n`,
    });
    const result = await runCli(["run", "eval.mjs"], { cwd: p.dir });
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/data\.jsonl:4/);
    expect(existsSync(p.db)).toBe(false);
    expect(calls(p.dir)).toHaveLength(0);
  });

  it("answers an unknown run id with a clear error naming the store, stet list and --store, and exit 1", async () => {
    const p = project({});
    const hint = (store: string) =>
      `stet: no run with id "r_doesnotexist" in ${store}; ` +
      "stet list shows the runs there, --store picks another store\n";
    const result = await runCli(["resume", "r_doesnotexist"], { cwd: p.dir });
    expect(result.code).toBe(1);
    expect(result.stderr).toBe(hint(p.db));
    const show = await runCli(["show", "r_doesnotexist"], { cwd: p.dir });
    expect(show.code).toBe(1);
    expect(show.stderr).toBe(hint(p.db));
    const other = join(p.dir, "other.db");
    await openSqliteStore(other).close();
    const elsewhere = await runCli(["show", "r_doesnotexist", "--store", other], { cwd: p.dir });
    expect(elsewhere.code).toBe(1);
    expect(elsewhere.stderr).toBe(hint(other));
  });

  it.each([
    [["run", "eval.mjs", "--frobnicate"]],
    [["run", "eval.mjs", "--epochs", "0"]],
    [["run", "eval.mjs", "--concurrency", "many"]],
    [["export", "r_x", "--format", "xml"]],
    [["launch"]],
  ])("exits 2 on a bad flag or command: %j", async (args) => {
    const p = project({ "eval.mjs": evalFile(1), "data.jsonl": questions(2) });
    const result = await runCli(args, { cwd: p.dir });
    expect(result.code).toBe(2);
    expect(result.stderr.length).toBeGreaterThan(0);
    expect(existsSync(p.db)).toBe(false);
  });

  it("exits 2 on a bad STET_STALE_MS and creates nothing", async () => {
    const p = project({ "eval.mjs": evalFile(1), "data.jsonl": questions(2) });
    const result = await runCli(["run", "eval.mjs"], {
      cwd: p.dir,
      env: { STET_STALE_MS: "soon" },
    });
    expect(result.code).toBe(2);
    expect(result.stderr).toContain("STET_STALE_MS");
    expect(calls(p.dir)).toHaveLength(0);
    expect(existsSync(p.db)).toBe(false);
  });

  it("exports outcomes as JSONL and CSV in key order, the same bytes every time", async () => {
    const p = project({ "eval.mjs": evalFile(1), "data.jsonl": questions(5) });
    const run = await runCli(["run", "eval.mjs", "--epochs", "2"], { cwd: p.dir });
    const runId = run.stdout.match(/^run (r_\w+)/)![1]!;
    const a = await runCli(["export", runId], { cwd: p.dir });
    const b = await runCli(["export", runId, "--format", "jsonl"], { cwd: p.dir });
    expect(a.stdout).toBe(b.stdout);
    const rows = a.stdout
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l));
    expect(rows.map((r) => `${r.sampleId}#${r.epoch}`)).toEqual(
      ["q000", "q001", "q002", "q003", "q004"].flatMap((id) => [`${id}#1`, `${id}#2`]),
    );
    expect(rows[0]).toMatchObject({
      runId,
      attempt: 1,
      status: "scored",
      output: "answer 0",
      error: null,
    });
    const csv = await runCli(["export", runId, "--format", "csv"], { cwd: p.dir });
    expect(csv.stdout.split("\n")[0]).toBe(
      "sampleId,epoch,status,input,target,output,exact,error,inputTokens,outputTokens,costUsd,startedAt,completedAt,durationMs,retries,cachedInputTokens,cacheWriteTokens,reasoningTokens,reusedCostUsd,limit,limitValue,limitUsed",
    );
    expect(csv.stdout.trim().split("\n")).toHaveLength(11);
  });

  it("stops quietly, exit 0, when the reader of its output goes away (stet export | head)", async () => {
    const p = project({ "eval.mjs": evalFile(0), "data.jsonl": questions(1500) });
    const run = await runCli(["run", "eval.mjs", "--concurrency", "32"], { cwd: p.dir });
    const runId = run.stdout.match(/^run (r_\w+)/)![1]!;
    // ~400 KB of JSONL against a 64 KB pipe: the writes after head exits meet EPIPE.
    const piped = spawnSync(
      "bash",
      ["-c", `set -o pipefail; "${process.execPath}" "${STET_BIN}" export ${runId} | head -n 1`],
      { cwd: p.dir, encoding: "utf8" },
    );
    expect(piped.stderr).toBe("");
    expect(piped.status).toBe(0);
    expect(JSON.parse(piped.stdout)).toMatchObject({ runId, sampleId: "q000" });
  });
});
