import Database from "better-sqlite3";
import { describe, expect, it } from "vitest";
import { runCli, startCli } from "./helpers/cli.js";
import { perTest, rawAttempts, rawRun } from "./helpers/eval-project.js";

// `stet resume --rerun-failed` SIGKILLed while it re-runs the failed keys, then a plain
// `stet resume`: the kill leaves the rest of the request recorded, the resume executes exactly
// those keys, every key asked ends with one new attempt, and every attempt stored before stands
// byte for byte. The file is over `stet resume`'s 8 MiB, so the re-run is planned and recorded
// from the snapshot's pages (issue 34: the store names the failed keys, the resume holds none).

const KEYS = 20_000;
const PAD = "x".repeat(420); // 20,000 rows of ~470 bytes: over 8 MiB
const COST = 0.001;

const EVAL = `
import { defineEval, scorers } from "stet";
export default defineEval({
  name: "rerun-kill",
  dataset: "./data.jsonl",
  solver: (sample) => ({ output: sample.input, usage: { inputTokens: 1, outputTokens: 1, costUsd: ${COST} } }),
  scorers: [scorers.exact()],
  concurrency: 16,
});
`;

/** Every 7th sample passes; the others' targets are wrong, so their keys fail. */
function data(): string {
  const rows: string[] = [];
  for (let i = 0; i < KEYS; i++) {
    const target = i % 7 === 0 ? `q ${i}` : "wrong";
    rows.push(JSON.stringify({ id: `s${i}`, input: `q ${i}`, target, metadata: { pad: PAD } }));
  }
  return rows.join("\n") + "\n";
}

const FAILING = KEYS - Math.ceil(KEYS / 7);

const { project } = perTest();

function count(db: string, sql: string): number {
  const conn = new Database(db, { readonly: true, fileMustExist: true });
  try {
    return (conn.prepare(sql).get() as { n: number }).n;
  } finally {
    conn.close();
  }
}

describe("stet resume --rerun-failed, SIGKILLed part way", () => {
  it("leaves the rest recorded; a plain resume re-runs exactly those keys, nothing stored changed", async () => {
    const p = project({ "eval.mjs": EVAL, "data.jsonl": data() });
    const first = await runCli(["run", "eval.mjs", "--run-id", "r"], { cwd: p.dir });
    expect(first.code, first.stderr).toBe(0);
    const before = rawAttempts(p.db);
    expect(before).toHaveLength(KEYS);

    const rerun = startCli(["resume", "r", "--rerun-failed"], { cwd: p.dir });
    let ended = false;
    void rerun.done.then(() => (ended = true));
    while (count(p.db, "SELECT count(*) AS n FROM attempts") <= KEYS + 1_000) {
      if (ended) throw new Error(`the re-run ended before its kill: ${rerun.stderr()}`);
      await new Promise((r) => setTimeout(r, 25));
    }
    rerun.child.kill("SIGKILL");
    expect((await rerun.done).signal).toBe("SIGKILL");
    const killedAt = count(p.db, "SELECT count(*) AS n FROM attempts");
    expect(killedAt).toBeLessThan(KEYS + FAILING);
    // Every failed key was recorded by the claim; none is done until it has a new attempt.
    expect(count(p.db, "SELECT count(*) AS n FROM rerun_requests")).toBe(FAILING);

    const resumed = await runCli(["resume", "r"], { cwd: p.dir });
    expect(resumed.code, resumed.stderr).toBe(0);
    const left = KEYS + FAILING - killedAt;
    expect(resumed.stdout).toContain(`${left.toLocaleString("en-US")} executed now`);
    const after = rawAttempts(p.db);
    expect(after).toHaveLength(KEYS + FAILING);
    const byKey = new Map(after.map((a) => [`${a.sample_id}#${a.epoch}#${a.attempt}`, a]));
    for (const a of before) expect(byKey.get(`${a.sample_id}#${a.epoch}#${a.attempt}`)).toEqual(a);
    for (const a of after) {
      const i = Number(a.sample_id.slice(1));
      expect(a.attempt).toBeLessThanOrEqual(i % 7 === 0 ? 1 : 2);
    }
    expect(count(p.db, "SELECT count(*) AS n FROM rerun_requests")).toBe(0);
    expect(rawRun(p.db, "r")).toMatchObject({ status: "completed" });
    // The spend is the stored attempts' sum: each re-run bought once.
    const shown = await runCli(["show", "r", "--json"], { cwd: p.dir });
    const { usage } = JSON.parse(shown.stdout) as {
      usage: { totalSpent: { attempts: number; costUsd: number } };
    };
    expect(usage.totalSpent.attempts).toBe(KEYS + FAILING);
    expect(usage.totalSpent.costUsd).toBeCloseTo((KEYS + FAILING) * COST, 6);
  }, 300_000);
});
