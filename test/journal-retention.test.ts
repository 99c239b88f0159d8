import Database from "better-sqlite3";
import { describe, expect, it, onTestFinished } from "vitest";
import { runCli } from "./helpers/cli.js";
import { evalProject } from "./helpers/eval-project.js";
import { SKIP_POSTGRES, testSchemaPool } from "./helpers/postgres.js";

/** Two tool steps per sample; odd samples then fail (an errored attempt that keeps its steps). */
const evalWith = (journal: string) => `
import { defineEval } from "stet";
export default defineEval({
  name: "retention",
  dataset: [0, 1, 2, 3].map((i) => ({ id: "s" + i, input: i })),
  journal: ${journal},
  solver: async (sample, ctx) => {
    const a = await ctx.step("read", { i: sample.input }, () => sample.input * 2);
    const b = await ctx.step("write", { a }, () => a + 1);
    if (sample.input % 2 === 1) throw new Error("odd sample " + sample.id);
    return String(b);
  },
  scorers: [function ran() { return true; }],
});
`;

type Reader = () => Promise<{ sample_id: string; attempt: number | null }[]>;
interface Store {
  dir: string;
  env: Record<string, string>;
  journal: Reader;
}

function sqliteStore(journal: string): Store {
  const project = evalProject({ "eval.mjs": evalWith(journal) });
  onTestFinished(project.cleanup);
  const read: Reader = async () => {
    const conn = new Database(project.db, { readonly: true, fileMustExist: true });
    try {
      return conn
        .prepare("SELECT sample_id, attempt FROM journal ORDER BY sample_id, step")
        .all() as Awaited<ReturnType<Reader>>;
    } finally {
      conn.close();
    }
  };
  return { dir: project.dir, env: {}, journal: read };
}

function postgresStore(journal: string): Store {
  const project = evalProject({ "eval.mjs": evalWith(journal) });
  onTestFinished(() => project.cleanup());
  const { url, db } = testSchemaPool();
  const read: Reader = async () =>
    (await db.query("SELECT sample_id, attempt FROM journal ORDER BY sample_id, step"))
      .rows as Awaited<ReturnType<Reader>>;
  return { dir: project.dir, env: { STET_STORE: url }, journal: read };
}

const stores: [string, (journal: string) => Store, boolean][] = [
  ["sqlite", sqliteStore, false],
  ["postgres", postgresStore, SKIP_POSTGRES],
];

describe.each(stores)("journal retention on %s", (_name, open, skip) => {
  it.skipIf(skip)("keeps every trajectory by default", async () => {
    const store = open("true");
    const run = await runCli(["run", "eval.mjs"], { cwd: store.dir, env: store.env });
    expect(run.code, run.stderr).toBe(3);
    expect(await store.journal()).toHaveLength(8);
  });

  it.skipIf(skip)(
    'keep "failed": when the run ends only the errored attempts keep their journal; a resume applies it again',
    async () => {
      const store = open(`{ keep: "failed" }`);
      const run = await runCli(["run", "eval.mjs"], { cwd: store.dir, env: store.env });
      expect(run.code, run.stderr).toBe(3);
      const runId = /^run (r_\w+)/m.exec(run.stdout)![1]!;
      expect(await store.journal()).toEqual([
        { sample_id: "s1", attempt: 1 },
        { sample_id: "s1", attempt: 1 },
        { sample_id: "s3", attempt: 1 },
        { sample_id: "s3", attempt: 1 },
      ]);
      // The resume retries the errored keys (they fail again): both attempts keep their steps.
      const resumed = await runCli(["resume", runId], { cwd: store.dir, env: store.env });
      expect(resumed.code, resumed.stderr).toBe(3);
      const rows = await store.journal();
      expect(rows.map((r) => `${r.sample_id}/${r.attempt}`).sort()).toEqual([
        "s1/1",
        "s1/1",
        "s1/2",
        "s1/2",
        "s3/1",
        "s3/1",
        "s3/2",
        "s3/2",
      ]);
    },
  );

  it.skipIf(skip)(
    'keep "open": a finished run keeps only the journals a resume replays (errored keys\' latest attempts)',
    async () => {
      const store = open(`{ keep: "open" }`);
      const run = await runCli(["run", "eval.mjs"], { cwd: store.dir, env: store.env });
      expect(run.code, run.stderr).toBe(3);
      const errored = [
        { sample_id: "s1", attempt: 1 },
        { sample_id: "s1", attempt: 1 },
        { sample_id: "s3", attempt: 1 },
        { sample_id: "s3", attempt: 1 },
      ];
      expect(await store.journal()).toEqual(errored);
      // The resume's new attempts replay both steps and fail again: theirs is the journal kept.
      const runId = /^run (r_\w+)/m.exec(run.stdout)![1]!;
      const resumed = await runCli(["resume", runId], { cwd: store.dir, env: store.env });
      expect(resumed.code, resumed.stderr).toBe(3);
      expect(resumed.stdout).toMatch(/journal +4 steps replayed/);
      expect(await store.journal()).toEqual(errored.map((r) => ({ ...r, attempt: 2 })));
    },
  );

  it.skipIf(skip)(
    "refuses an unknown retention, naming the field, before anything runs",
    async () => {
      const store = open(`{ keep: "some" }`);
      const run = await runCli(["run", "eval.mjs"], { cwd: store.dir, env: store.env });
      expect(run.code).toBe(1);
      expect(run.stderr).toMatch(/journal/);
      expect(run.stderr).toMatch(/keep/);
    },
  );
});
