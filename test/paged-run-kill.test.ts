import { existsSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { openSqliteStore } from "../src/store/sqlite/index.js";
import { runCli, startCli } from "./helpers/cli.js";
import { perTest } from "./helpers/eval-project.js";
import { SKIP_POSTGRES, testSchemaPool } from "./helpers/postgres.js";
import { until } from "./helpers/wait.js";

// `stet run` of a dataset file of 8 MiB and up writes the run's snapshot from the file's pages
// (staged in a TEMP table of one connection, SQLite's or PostgreSQL's, then copied in one transaction):
// a SIGKILL while they are written leaves no run and nothing of one, and the same run id then
// starts afresh. The eval's `sample` mapper stops the reading at a row far into the file (it
// marks the moment in a file and sleeps), so the kill lands while the snapshot is being written.

const KEYS = 200_000; // 10.8 MB of rows: over stet run's 8 MiB
const BLOCK_AT = "s150000";

const EVAL = `
import { writeFileSync } from "node:fs";
import { defineEval, scorers } from "stet";
export default defineEval({
  name: "paged-kill",
  dataset: "./data.jsonl",
  sample: (row) => {
    if (process.env.BLOCK_AT === row.id) {
      writeFileSync(process.env.MARKER, "");
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 120_000);
    }
    return row;
  },
  solver: (sample) => sample.input,
  scorers: [scorers.exact()],
  concurrency: 16,
});
`;

function data(n: number): string {
  const rows: string[] = [];
  for (let i = 0; i < n; i++) rows.push(`{"id":"s${i}","input":"q ${i}","target":"q ${i}"}\n`);
  return rows.join("");
}

const { project } = perTest();

/** Starts `stet run --run-id paged` blocked at BLOCK_AT, SIGKILLs it there, returns its output. */
async function killedWhileCreating(dir: string, env: NodeJS.ProcessEnv) {
  const marker = join(dir, "reading-blocked");
  const cli = startCli(["run", "eval.mjs", "--run-id", "paged"], {
    cwd: dir,
    env: { ...env, BLOCK_AT, MARKER: marker },
  });
  let ended = false;
  void cli.done.then(() => (ended = true));
  await until(() => existsSync(marker) || ended, "the reading blocked at " + BLOCK_AT, 120_000);
  expect(ended, cli.stderr()).toBe(false);
  cli.child.kill("SIGKILL");
  const killed = await cli.done;
  expect(killed.signal).toBe("SIGKILL");
}

/** The same run id started again, reading only a few rows: it is created and completes. */
async function startedAgain(dir: string, env: NodeJS.ProcessEnv) {
  const again = await runCli(["run", "eval.mjs", "--run-id", "paged", "--limit", "500"], {
    cwd: dir,
    env,
  });
  expect(again.code, again.stderr).toBe(0);
  expect(again.stdout).toMatch(/500 total · 500 scored/);
}

describe("a SIGKILL while a paged run's snapshot is written", () => {
  it("SQLite: no run, no staged rows left, and the run id starts afresh", async () => {
    const p = project({ "eval.mjs": EVAL, "data.jsonl": data(KEYS) });
    await killedWhileCreating(p.dir, {});
    const store = openSqliteStore(p.db, { create: false });
    try {
      expect(await store.reads.listRuns()).toEqual([]);
    } finally {
      await store.close();
    }
    // The stage was a TEMP table: nothing of it beside the store's own files.
    const files = readdirSync(join(p.dir, ".stet")).filter(
      (f) => !/^stet\.db(-wal|-shm)?$/.test(f),
    );
    expect(files).toEqual([]);
    await startedAgain(p.dir, {});
  });

  it.skipIf(SKIP_POSTGRES)(
    "PostgreSQL: the session's stage is gone with it, no run or sample was written, and the run id starts afresh",
    async () => {
      const p = project({ "eval.mjs": EVAL, "data.jsonl": data(KEYS) });
      const { url, db } = testSchemaPool();
      const env = { STET_STORE: url };
      await killedWhileCreating(p.dir, env);
      // The stage was the killed session's TEMP table: nothing of it was ever in `samples`.
      const count = async (table: string) =>
        (await db.query(`SELECT count(*)::int AS n FROM ${table}`)).rows[0].n as number;
      expect(await count("runs")).toBe(0);
      expect(await count("samples")).toBe(0);
      await startedAgain(p.dir, env);
      expect(await count("samples")).toBe(500);
    },
  );
});
