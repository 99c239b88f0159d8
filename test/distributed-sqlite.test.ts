import Database from "better-sqlite3";
import { describe, expect, it } from "vitest";
import { startCli } from "./helpers/cli.js";
import { perTest, questions } from "./helpers/eval-project.js";
import { solverCalls, until } from "./helpers/wait.js";

const { project } = perTest();

/** A solver that logs each call (sample id and pid) to calls.log, then answers after 50 ms. */
const EVAL = `
import { appendFileSync } from "node:fs";
import { defineEval, scorers } from "stet";
export default defineEval({
  name: "distributed-sqlite",
  dataset: "./data.jsonl",
  solver: async (sample) => {
    appendFileSync(new URL("./calls.log", import.meta.url), sample.id + " " + process.pid + "\\n");
    await new Promise((resolve) => setTimeout(resolve, 50));
    return sample.target;
  },
  scorers: [scorers.exact()],
  concurrency: 4,
});
`;

const scoredPerKey = (db: string) =>
  new Database(db, { readonly: true })
    .prepare(
      `SELECT sample_id, COUNT(*) AS n FROM attempts WHERE status = 'scored' GROUP BY sample_id`,
    )
    .all() as { sample_id: string; n: number }[];

/**
 * The store port's leases on SQLite (BEGIN IMMEDIATE): processes on one machine share a run of
 * the default store file, and a SIGKILLed worker's keys are taken over at once (its pid is gone).
 */
describe("distributed runs on a SQLite file (processes on one machine)", () => {
  it("a run and a worker share the keys; the worker SIGKILLed, the run finishes, each key once", async () => {
    const p = project({ "eval.mjs": EVAL, "data.jsonl": questions(200) });
    const run = startCli(["run", "eval.mjs", "--distributed"], { cwd: p.dir });
    const [, runId] = await run.waitFor(/^run (r_\w+)/m);
    const worker = startCli(["worker", "--run", runId!], { cwd: p.dir });
    const workerPid = String(worker.child.pid);
    // Both are executing: the worker has called the solver a few times.
    await until(
      () => solverCalls(p.dir).filter((line) => line.endsWith(` ${workerPid}`)).length >= 8,
      "the worker's first solver calls",
    );
    worker.child.kill("SIGKILL");
    const result = await run.done;
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toMatch(/status\s+completed/);

    const perKey = scoredPerKey(p.db);
    expect(perKey).toHaveLength(200);
    expect(perKey.every((row) => row.n === 1)).toBe(true);
    // Only what the worker had in flight (its concurrency, 4) ran twice.
    const calls = solverCalls(p.dir).map((line) => line.split(" ")[0]!);
    expect(calls.length - new Set(calls).size).toBeLessThanOrEqual(4);
    const workers = new Database(p.db, { readonly: true })
      .prepare(`SELECT pid, state FROM workers ORDER BY started_at`)
      .all() as { pid: number; state: string }[];
    expect(workers.map((w) => w.state)).toEqual(["finished", "lost"]);
    const leased = new Database(p.db, { readonly: true })
      .prepare(`SELECT COUNT(*) AS n FROM leases WHERE done = 0`)
      .get() as { n: number };
    expect(leased.n).toBe(0);
  });

  it("a worker for a run that is not distributed, or unknown, is refused with the reason", async () => {
    const p = project({ "eval.mjs": EVAL, "data.jsonl": questions(3) });
    const plain = await startCli(["run", "eval.mjs"], { cwd: p.dir }).done;
    expect(plain.code, plain.stderr).toBe(0);
    const runId = plain.stdout.match(/^run (r_\w+)/m)![1]!;
    const refused = await startCli(["worker", "--run", runId], { cwd: p.dir }).done;
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain(`run ${runId} is not a distributed run`);
    const unknown = await startCli(["worker", "--run", "r_nope"], { cwd: p.dir }).done;
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toMatch(/no run with id "r_nope"/);
    const none = await startCli(["worker"], { cwd: p.dir }).done;
    expect(none.code).toBe(0);
    expect(none.stdout).toContain("no open distributed run to work on");
  });
});
