import { spawn } from "node:child_process";
import Database from "better-sqlite3";
import { describe, expect, it } from "vitest";
import { STET_BIN } from "./helpers/cli.js";
import { perTest } from "./helpers/eval-project.js";
import { SKIP_POSTGRES, testSchemaPool } from "./helpers/postgres.js";

// A run of a dataset file of 8 MiB and up, SIGKILLed while it executes, then its resume (which
// executes from the snapshot's pages) SIGKILLed too, then resumed again: every key ends with
// exactly one attempt, and each CLI runs with its heap capped below what loading the dataset
// needs (issue 34: main at 1552652 needed 81-88 MB for this resume, out of heap under 80 before
// its first commit), so the resumes cannot have taken the old way. SQLite; and PostgreSQL with
// 40,000 longer rows (as many bytes, a fifth of the keys: its commits are slower), uncapped.

const KEYS = 200_000; // 10.8 MB of rows: over stet resume's 8 MiB
const PG_KEYS = 40_000; // 10.1 MB of rows
const HEAP_MB = 48;

const EVAL = `
import { defineEval, scorers } from "stet";
export default defineEval({
  name: "paged-resume-kill",
  dataset: "./data.jsonl",
  solver: (sample) => sample.input,
  scorers: [scorers.exact()],
  concurrency: 16,
});
`;

function data(n: number, pad = ""): string {
  const rows: string[] = [];
  for (let i = 0; i < n; i++) {
    rows.push(`{"id":"s${i}","input":"q ${i}${pad}","target":"q ${i}${pad}"}\n`);
  }
  return rows.join("");
}

const { project } = perTest();

interface Counts {
  attempts: number;
  keys: number;
  scored: number;
}

/** `stet <args>` (with the heap capped unless `STET_TEST_UNCAPPED`), as a real child process. */
function capped(cwd: string, env: NodeJS.ProcessEnv, args: string[]) {
  const cap = env.STET_TEST_UNCAPPED ? [] : [`--max-old-space-size=${HEAP_MB}`];
  const child = spawn(process.execPath, [...cap, STET_BIN, ...args], {
    cwd,
    env: { ...process.env, NO_COLOR: "1", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  child.stdout.setEncoding("utf8").on("data", (d: string) => (stdout += d));
  child.stderr.setEncoding("utf8").on("data", (d: string) => (stderr += d));
  const done = new Promise<{
    code: number | null;
    signal: string | null;
    stdout: string;
    stderr: string;
  }>((resolve) => child.on("close", (code, signal) => resolve({ code, signal, stdout, stderr })));
  return { child, done };
}

/** Runs `args`, SIGKILLs it once more than `beyond` attempts are stored; the counts then. */
async function killedAfter(
  cwd: string,
  env: NodeJS.ProcessEnv,
  args: string[],
  beyond: number,
  counts: () => Promise<Counts>,
): Promise<Counts> {
  const cli = capped(cwd, env, args);
  let ended: Awaited<typeof cli.done> | undefined;
  void cli.done.then((end) => (ended = end));
  while ((await counts()).attempts <= beyond) {
    if (ended) throw new Error(`stet ${args.join(" ")} ended (${ended.code}): ${ended.stderr}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  cli.child.kill("SIGKILL");
  expect((await cli.done).signal).toBe("SIGKILL");
  return counts();
}

/** Run, SIGKILL, resume, SIGKILL, resume: one attempt a key, the preserved ones never again. */
async function killedTwice(
  dir: string,
  env: NodeJS.ProcessEnv,
  counts: () => Promise<Counts>,
  keys = KEYS,
) {
  const step = Math.floor(keys / 7);
  const first = await killedAfter(dir, env, ["run", "eval.mjs", "--run-id", "r"], step, counts);
  expect(first.attempts).toBeLessThan(keys);
  const second = await killedAfter(dir, env, ["resume", "r"], first.attempts + step, counts);
  expect(second.attempts).toBeLessThan(keys);
  expect(second.keys).toBe(second.attempts); // the kills left no key with two attempts

  const last = await capped(dir, env, ["resume", "r"]).done;
  expect(last.code, last.stderr).toBe(0);
  expect(last.stdout).toContain(`plan: ${second.attempts.toLocaleString("en-US")} preserved`);
  expect(await counts()).toEqual({ attempts: keys, keys, scored: keys });
}

const COUNTS_SQL =
  "SELECT count(*) AS attempts, count(DISTINCT sample_id) AS keys, " +
  "count(*) FILTER (WHERE status = 'scored') AS scored FROM attempts";

describe("a paged run and its paged resume, each SIGKILLed while executing", () => {
  it("SQLite: resumed to one attempt a key, under a heap cap loading the dataset would break", async () => {
    const p = project({ "eval.mjs": EVAL, "data.jsonl": data(KEYS) });
    const counts = async (): Promise<Counts> => {
      try {
        const db = new Database(p.db, { readonly: true, fileMustExist: true });
        try {
          return db.prepare(COUNTS_SQL).get() as Counts;
        } finally {
          db.close();
        }
      } catch {
        return { attempts: 0, keys: 0, scored: 0 }; // no store or tables yet
      }
    };
    await killedTwice(p.dir, {}, counts);
  }, 300_000);

  it.skipIf(SKIP_POSTGRES)(
    "PostgreSQL: resumed to one attempt a key",
    async () => {
      const p = project({ "eval.mjs": EVAL, "data.jsonl": data(PG_KEYS, " ".repeat(100)) });
      const { url, db } = testSchemaPool();
      const counts = async (): Promise<Counts> => {
        const sql =
          "SELECT count(*)::int AS attempts, count(DISTINCT sample_id)::int AS keys, " +
          "(count(*) FILTER (WHERE status = 'scored'))::int AS scored FROM attempts";
        return db.query(sql).then(
          (r) => r.rows[0] as Counts,
          () => ({ attempts: 0, keys: 0, scored: 0 }),
        );
      };
      await killedTwice(p.dir, { STET_STORE: url, STET_TEST_UNCAPPED: "1" }, counts, PG_KEYS);
    },
    300_000,
  );
});
