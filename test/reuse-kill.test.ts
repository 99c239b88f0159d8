import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import Database from "better-sqlite3";
import { describe, expect, it } from "vitest";
import { capped, committed, waitForCommitted } from "./helpers/capped-cli.js";
import { perTest } from "./helpers/eval-project.js";

// `stet run --reuse` of a dataset file of 8 MiB and up seeds the reused attempts a page of the
// source at a time, then records `reuse.seeded`. SIGKILLed while it seeds, the run is left with
// part of them and without the mark: `stet resume` seeds the rest before anything executes, so
// no key the source paid for is bought again, and the run ends with one attempt a key. Not timed.

const KEYS = 80_000;

const EVAL = `
import { appendFileSync } from "node:fs";
import { defineEval, scorers } from "stet";
export default defineEval({
  name: "reuse-kill",
  dataset: "./data.jsonl",
  solver: (sample) => {
    appendFileSync(new URL("./calls.log", import.meta.url), sample.id + "\\n");
    return sample.input;
  },
  scorers: [scorers.exact()],
  concurrency: 64,
});
`;

const { project } = perTest();

/** `n` rows of ~120 bytes (80,000 make a 9.6 MB file, over the 8 MiB that pages it). */
function paddedData(n: number, edited: (i: number) => boolean = () => false): string {
  const pad = "x".repeat(36);
  let out = "";
  for (let i = 0; i < n; i++) {
    const target = `${edited(i) ? "Q" : "q"} ${i} ${pad}`;
    out += `{"id":"s${i}","input":"q ${i} ${pad}","target":"${target}"}\n`;
  }
  return out;
}

/** The solver's calls since the last look. */
function calls(dir: string): number {
  const log = join(dir, "calls.log");
  const n = existsSync(log) ? readFileSync(log, "utf8").split("\n").length - 1 : 0;
  writeFileSync(log, "");
  return n;
}

/** The id of the store's one run other than `runId`. */
function otherRun(db: string, runId: string): string {
  const store = new Database(db, { readonly: true, fileMustExist: true });
  try {
    const rows = store.prepare("SELECT id FROM runs WHERE id != ?").all(runId) as { id: string }[];
    expect(rows).toHaveLength(1);
    return rows[0]!.id;
  } finally {
    store.close();
  }
}

/** The new run's attempts, by provenance, and its recorded reuse. */
function newRun(db: string, runId: string) {
  const store = new Database(db, { readonly: true, fileMustExist: true });
  try {
    const rows = store
      .prepare(
        "SELECT provenance_kind AS kind, count(*) AS n, count(DISTINCT sample_id) AS samples FROM attempts WHERE run_id = ? GROUP BY provenance_kind",
      )
      .all(runId) as { kind: string; n: number; samples: number }[];
    const { config } = store.prepare("SELECT config FROM runs WHERE id = ?").get(runId) as {
      config: string;
    };
    return { rows, reuse: (JSON.parse(config) as { reuse?: { seeded?: true } }).reuse };
  } finally {
    store.close();
  }
}

describe("stet run --reuse of a large file, SIGKILLed while it seeds", () => {
  it("is seeded the rest of the way by stet resume: no reused key executed, one attempt a key", async () => {
    const p = project({ "eval.mjs": EVAL, "data.jsonl": paddedData(KEYS) });
    const source = await capped(p.dir, ["run", "eval.mjs", "--json"]).done;
    expect(source.code, source.stderr).toBe(0);
    const sourceId = (JSON.parse(source.stdout) as { runId: string }).runId;
    expect(calls(p.dir)).toBe(KEYS);

    // Every 100th target edited: those keys execute, the rest are reused.
    const edited = (i: number) => i % 100 === 50;
    writeFileSync(join(p.dir, "data.jsonl"), paddedData(KEYS, edited));
    const changed = KEYS / 100;
    const run = capped(p.dir, ["run", "eval.mjs", "--reuse", sourceId]);
    await waitForCommitted(p.db, KEYS + 5_000, run);
    run.child.kill("SIGKILL");
    const killed = await run.done;
    expect(killed.signal, killed.stderr).toBe("SIGKILL");
    const runId = otherRun(p.db, sourceId);
    const cut = newRun(p.db, runId);
    expect(cut.reuse).toBeDefined();
    expect(cut.reuse!.seeded).toBeUndefined(); // killed before every reused key was stored
    const seededAtKill = cut.rows.find((r) => r.kind === "imported")?.n ?? 0;
    expect(seededAtKill).toBeGreaterThan(0);
    expect(seededAtKill).toBeLessThan(KEYS - changed);
    expect(calls(p.dir)).toBe(0); // nothing executed before the seed was whole

    const resumed = await capped(p.dir, ["resume", runId, "--json"]).done;
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(JSON.parse(resumed.stdout)).toMatchObject({
      status: "completed",
      counts: { total: KEYS, scored: KEYS, remaining: 0 },
    });
    // Only the edited keys were bought; every other key is the source's, stored once.
    expect(calls(p.dir)).toBe(changed);
    const done = newRun(p.db, runId);
    expect(done.reuse!.seeded).toBe(true);
    expect(done.rows).toEqual([
      { kind: "executed", n: changed, samples: changed },
      { kind: "imported", n: KEYS - changed, samples: KEYS - changed },
    ]);
    expect(committed(p.db)).toBe(2 * KEYS);
  }, 600_000);
});
