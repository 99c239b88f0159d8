import { existsSync } from "node:fs";
import Database from "better-sqlite3";
import pg from "pg";
import { afterEach } from "vitest";
import { processState } from "../../src/store/sqlite/lock-holder.js";
import { startCli, type CliProcess } from "./cli.js";
import { rawAttempts, rawRun } from "./eval-project.js";
import { TEST_POSTGRES_URL, testSchema } from "./postgres.js";
import { until } from "./wait.js";

/** The stale limit the owner tests give `stet` (STET_STALE_MS): heartbeats every 0.75 s. */
export const STALE_MS = 3_000;

/** A list of clean-ups that run, last first, after each test of the file that calls this. */
export function cleanupsAfterEach(): (() => unknown)[] {
  const cleanups: (() => unknown)[] = [];
  afterEach(async () => {
    while (cleanups.length) await cleanups.pop()!();
  });
  return cleanups;
}

/** An attempt row as the database holds it. */
export interface Row {
  sample_id: string;
  epoch: number;
  attempt: number;
  [column: string]: unknown;
}

/** A store of one kind, as the CLI opens it (`args`) and as the test reads and edits it. */
export interface TestStore {
  kind: "SQLite" | "PostgreSQL";
  args: string[];
  attempts: () => Promise<Row[]>;
  run: (runId: string) => Promise<Record<string, unknown> | undefined>;
  /** The step journal's rows, ordered by key, attempt and step. */
  journal: () => Promise<Record<string, unknown>[]>;
  /**
   * Runs one statement (`?` parameters) on the runs table, named `runs` in it: what a test edits
   * to play another host or a clock jump.
   */
  execOnRuns: (sql: string, params: unknown[]) => Promise<void>;
  /** The PostgreSQL URL with its schema, for a store opened in the test process. */
  url?: string;
  schema?: string;
}

const JOURNAL_ORDER = "sample_id, epoch, attempt NULLS LAST, step";

/** A function solver that takes `sleepMs` per sample, so a run lasts a few seconds. */
export function slowEval(sleepMs: number): string {
  return `
import { appendFileSync } from "node:fs";
import { defineEval, scorers } from "stet";
export default defineEval({
  name: "slow",
  dataset: "./data.jsonl",
  solver: async (sample) => {
    appendFileSync(new URL("./calls.log", import.meta.url), sample.id + "\\n");
    await new Promise((r) => setTimeout(r, ${sleepMs}));
    return String(sample.input).replace("question", "answer");
  },
  scorers: [scorers.exact()],
  concurrency: 2,
});
`;
}

/** The project's SQLite store (`.stet/stet.db`, the CLI's default). */
export function sqliteTestStore(db: string): TestStore {
  return {
    kind: "SQLite",
    args: [],
    attempts: async () => (existsSync(db) ? rawAttempts(db) : []),
    run: async (runId) => rawRun(db, runId),
    journal: async () => {
      if (!existsSync(db)) return [];
      const conn = new Database(db, { readonly: true, timeout: 10_000 });
      try {
        return conn.prepare(`SELECT * FROM journal ORDER BY ${JOURNAL_ORDER}`).all() as Row[];
      } finally {
        conn.close();
      }
    },
    execOnRuns: async (sql, params) => {
      const conn = new Database(db, { timeout: 10_000 });
      try {
        conn.prepare(sql).run(...params);
      } finally {
        conn.close();
      }
    },
  };
}

/** A fresh schema of the test PostgreSQL; `cleanups` gets what drops it. */
export async function postgresTestStore(cleanups: (() => unknown)[]): Promise<TestStore> {
  const { schema, drop } = testSchema();
  const admin = new pg.Client({ connectionString: TEST_POSTGRES_URL });
  await admin.connect();
  cleanups.push(drop, () => admin.end());
  const url = new URL(TEST_POSTGRES_URL);
  url.searchParams.set("schema", schema);
  const table = (name: string) => `"${schema}".${name}`;
  const exists = async () =>
    (await admin.query("SELECT to_regclass($1) AS t", [table("attempts")])).rows[0].t !== null;
  return {
    kind: "PostgreSQL",
    args: ["--store", url.toString()],
    url: url.toString(),
    schema,
    attempts: async () => {
      if (!(await exists())) return [];
      const sql = `SELECT * FROM ${table("attempts")} ORDER BY sample_id, epoch, attempt`;
      return (await admin.query<Row>(sql)).rows;
    },
    run: async (runId) =>
      (await admin.query(`SELECT * FROM ${table("runs")} WHERE id = $1`, [runId])).rows[0],
    journal: async () => {
      if (!(await exists())) return [];
      return (await admin.query(`SELECT * FROM ${table("journal")} ORDER BY ${JOURNAL_ORDER}`))
        .rows;
    },
    execOnRuns: async (sql, params) => {
      let n = 0;
      const text = sql.replace(/\?/g, () => `$${++n}`).replace(/\bruns\b/, table("runs"));
      await admin.query(text, params);
    },
  };
}

/** Waits until `pid` is stopped (state T in /proc/<pid>/stat). */
export async function stopped(pid: number): Promise<void> {
  await until(() => processState(pid) === "T", `pid ${pid} to stop`);
}

/**
 * Starts `stet run eval.mjs` on `store` and waits until it has committed 4 attempts. `cleanups`
 * gets what kills it, should the test end first.
 */
export async function startOwner(
  store: TestStore,
  dir: string,
  env: NodeJS.ProcessEnv,
  cleanups: (() => unknown)[],
): Promise<{ owner: CliProcess; runId: string; pid: number }> {
  const owner = startCli(["run", "eval.mjs", ...store.args], { cwd: dir, env });
  cleanups.push(() => {
    if (owner.child.exitCode === null && owner.child.signalCode === null) {
      owner.child.kill("SIGKILL");
      owner.child.kill("SIGCONT");
    }
  });
  const runId = (await owner.waitFor(/^run (r_\w+)/m))[1]!;
  await until(async () => (await store.attempts()).length >= 4, "4 committed attempts");
  return { owner, runId, pid: owner.child.pid! };
}

/** The distinct keys of attempt rows. */
export function keysOf(rows: readonly Row[]): Set<string> {
  return new Set(rows.map((r) => `${r.sample_id}#${r.epoch}`));
}
