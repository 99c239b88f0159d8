import { appendFileSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { runCli } from "./helpers/cli.js";
import { perTest, rawAttempts } from "./helpers/eval-project.js";
import { startMockOpenAI, type MockOpenAI } from "./helpers/mock-openai.js";
import { testSchemaPool } from "./helpers/postgres.js";

/**
 * Issue 31 items 1 and 2: `stet run --reuse`, through the real CLI against a local
 * OpenAI-format server counting requests. Every request costs $0.01 (10 prompt tokens at $1000
 * per 1M); the reply is "the answer N" (`includes` scores 1, `exact` 0).
 */
const EVAL = `
import { defineEval, scorers, solvers } from "stet";
export default defineEval({
  name: "reuse",
  dataset: "./data.jsonl",
  solver: solvers.chat({
    model: process.env.MODEL ?? "m1",
    baseURL: process.env.MOCK_URL,
    prices: { input: 1000, output: 0 },
  }),
  scorers: process.env.EXACT ? [scorers.includes(), scorers.exact()] : [scorers.includes()],
  epochs: Number(process.env.EPOCHS ?? 1),
  concurrency: 8,
});
`;

let mock: MockOpenAI;
let failing = new Set<string>();
beforeAll(async () => {
  mock = await startMockOpenAI({
    reply: ({ key }) => key.replace("question", "the answer"),
    usage: { prompt_tokens: 10, completion_tokens: 5 },
    respond: ({ key }) =>
      failing.has(key) ? { status: 400, body: { error: { message: "bad request" } } } : undefined,
  });
});
afterAll(() => mock.close());
afterEach(() => {
  mock.reset();
  failing = new Set();
});

const { project } = perTest();
const runIdOf = (stdout: string) => stdout.match(/^run (r_\w+)/m)?.[1] ?? "";

function rows(ids: number[], edited: ReadonlySet<number> = new Set()): string {
  return ids
    .map((i) => {
      const id = `q${String(i).padStart(3, "0")}`;
      const input = `question ${i}${edited.has(i) ? " (edited)" : ""}`;
      return JSON.stringify({ id, input, target: `answer ${i}` });
    })
    .join("\n");
}
const range = (from: number, to: number) => Array.from({ length: to - from }, (_, i) => from + i);

interface Shown {
  notReused: { reason: string; keys: number }[];
  counts: { total: number; scored: number; errored: number; remaining: number };
  metrics: { scorer: string; mean: number; samples: number }[];
  usage: Record<string, { attempts: number; costUsd: number }>;
  reuse?: {
    source: string | null;
    reused: number;
    rescored: number;
    notReused: { reason: string; keys: number }[];
  };
}

async function start(dir: string, env: NodeJS.ProcessEnv, ...args: string[]) {
  const run = await runCli(["run", "eval.mjs", "--json", ...args], {
    cwd: dir,
    env: { MOCK_URL: mock.url, OPENAI_API_KEY: "sk-test", ...env },
  });
  return {
    ...run,
    runId: runIdOf(run.stdout) || (JSON.parse(run.stdout) as { runId: string }).runId,
  };
}

async function plan(dir: string, env: NodeJS.ProcessEnv, ...args: string[]): Promise<string> {
  const planned = await runCli(["plan", "eval.mjs", "--json", ...args], {
    cwd: dir,
    env: { MOCK_URL: mock.url, OPENAI_API_KEY: "sk-test", ...env },
  });
  expect(planned.code, planned.stderr).toBe(0);
  return planned.stdout;
}

async function show(dir: string, runId: string): Promise<Shown> {
  const shown = await runCli(["show", runId, "--json"], { cwd: dir });
  expect(shown.code, shown.stderr).toBe(0);
  return JSON.parse(shown.stdout) as Shown;
}

async function exported(dir: string, runId: string): Promise<Record<string, unknown>[]> {
  const out = await runCli(["export", runId, "--format", "jsonl"], { cwd: dir });
  expect(out.code, out.stderr).toBe(0);
  return out.stdout
    .trim()
    .split("\n")
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

describe("stet run --reuse", () => {
  it("reuses every unchanged key of a 100 × 2 run: edits, additions and deletions execute (30 requests)", async () => {
    const p = project({ "eval.mjs": EVAL, "data.jsonl": rows(range(0, 100)) });
    const a = await start(p.dir, { EPOCHS: "2" });
    expect(a.code, a.stderr).toBe(0);
    expect(mock.requests).toHaveLength(200);
    mock.reset();

    // Edit 10 rows, add 5, delete 3: 102 samples, 87 unchanged.
    writeFileSync(
      join(p.dir, "data.jsonl"),
      rows(
        range(0, 105).filter((i) => i < 97 || i >= 100),
        new Set(range(0, 10)),
      ),
    );
    // `stet plan` says it first, the same bytes each time, and runs nothing.
    const planned = await plan(p.dir, { EPOCHS: "2" }, "--reuse", "latest");
    expect(await plan(p.dir, { EPOCHS: "2" }, "--reuse", "latest")).toBe(planned);
    expect(JSON.parse(planned)).toEqual({
      evalName: "reuse",
      keys: 204,
      requested: "latest",
      source: a.runId,
      reused: 174,
      rescored: 0,
      execute: 30,
      notReused: [
        { reason: "sample changed: input", keys: 20 },
        { reason: "new sample", keys: 10 },
      ],
      meanCostUsd: 0.01,
      expectedSpendUsd: 0.3,
    });
    expect(mock.requests).toHaveLength(0);

    const b = await start(p.dir, { EPOCHS: "2" }, "--reuse", "latest");
    expect(b.code, b.stderr).toBe(0);
    expect(mock.requests).toHaveLength(30);
    const report = JSON.parse(b.stdout) as Shown;
    expect(report.usage.spentNow).toMatchObject({ attempts: 30 });
    expect(report.usage.spentNow!.costUsd).toBeCloseTo(0.3, 9);
    expect(report.usage.reused).toMatchObject({ attempts: 174 });
    expect(report.usage.totalSpent!.costUsd).toBeCloseTo(0.3, 9);

    const shown = await show(p.dir, b.runId);
    expect(shown.counts).toMatchObject({ total: 204, scored: 204, remaining: 0 });
    expect(shown.reuse).toEqual({
      source: a.runId,
      requested: "latest",
      reused: 174,
      rescored: 0,
      notReused: [
        { reason: "sample changed: input", keys: 20 },
        { reason: "new sample", keys: 10 },
      ],
    });
    const human = await runCli(["show", b.runId], { cwd: p.dir });
    expect(human.stdout).toContain(`reuse    174 keys reused from run ${a.runId} · 30 not reused:`);

    // Each reused attempt names its source attempt; its export row is run A's but for the run
    // id and provenance.
    const stored = rawAttempts(p.db).filter(
      (r) => r.run_id === b.runId && r.provenance_kind === "imported",
    );
    expect(stored).toHaveLength(174);
    for (const r of stored) expect(r.provenance_source).toBe(`run:${a.runId}#1`);
    const before = new Map(
      (await exported(p.dir, a.runId)).map((r) => [`${String(r.sampleId)}#${String(r.epoch)}`, r]),
    );
    expect(before.size).toBe(200);
    const after = (await exported(p.dir, b.runId)).filter((r) => r.provenance === "imported");
    expect(after).toHaveLength(174);
    for (const row of after) {
      const { runId, provenance, source, ...rest } = row;
      const key = `${String(row.sampleId)}#${String(row.epoch)}`;
      expect([...before.keys()], `run B's imported ${key} is not in run A's export`).toContain(key);
      const { runId: runA, provenance: kindA, ...was } = before.get(key)!;
      expect([runId, provenance, source, runA, kindA]).toEqual([
        b.runId,
        "imported",
        `run:${a.runId}#1`,
        a.runId,
        "executed",
      ]);
      expect(rest).toEqual(was);
    }
  });

  it("reuses nothing when the model changed, and says why", async () => {
    const p = project({ "eval.mjs": EVAL, "data.jsonl": rows(range(0, 10)) });
    const a = await start(p.dir, {});
    expect(a.code, a.stderr).toBe(0);
    mock.reset();
    const planned = JSON.parse(await plan(p.dir, { MODEL: "m2" }, "--reuse", "latest")) as Shown;
    expect(planned).toMatchObject({ reused: 0, execute: 10 });
    expect(planned.notReused[0]?.reason).toContain('solver.model: "m1" → "m2"');
    const b = await start(p.dir, { MODEL: "m2" }, "--reuse", "latest");
    expect(b.code, b.stderr).toBe(0);
    expect(mock.requests).toHaveLength(10);
    const shown = await show(p.dir, b.runId);
    expect(shown.reuse).toMatchObject({ source: null, reused: 0 });
    expect(shown.reuse?.notReused).toHaveLength(1);
    expect(shown.reuse?.notReused[0]).toMatchObject({ keys: 10 });
    expect(shown.reuse?.notReused[0]?.reason).toContain('solver.model: "m1" → "m2"');
    // Named explicitly, the run is the source, and the reason the same.
    mock.reset();
    const c = await start(p.dir, { MODEL: "m2" }, "--reuse", a.runId);
    expect(mock.requests).toHaveLength(10);
    expect((await show(p.dir, c.runId)).reuse?.notReused[0]?.reason).toBe(
      'solver.model: "m1" → "m2"',
    );
  });

  it("rescores every reused output when a scorer was added: 0 requests, metrics over both scorers", async () => {
    const p = project({ "eval.mjs": EVAL, "data.jsonl": rows(range(0, 20)) });
    const a = await start(p.dir, {});
    expect(a.code, a.stderr).toBe(0);
    mock.reset();
    const b = await start(p.dir, { EXACT: "1" }, "--reuse", "latest");
    expect(b.code, b.stderr).toBe(0);
    expect(mock.requests).toHaveLength(0);
    const shown = await show(p.dir, b.runId);
    expect(shown.reuse).toMatchObject({ source: a.runId, reused: 20, rescored: 20, notReused: [] });
    expect(shown.counts).toMatchObject({ total: 20, scored: 20, errored: 0 });
    expect(shown.metrics).toEqual([
      expect.objectContaining({ scorer: "includes", mean: 1, samples: 20 }),
      expect.objectContaining({ scorer: "exact", mean: 0, samples: 20 }),
    ]);
  });

  it("executes the source run's 10 errored keys again, never reusing an error", async () => {
    const p = project({ "eval.mjs": EVAL, "data.jsonl": rows(range(0, 20)) });
    failing = new Set(range(10, 20).map((i) => `question ${i}`));
    const a = await start(p.dir, {});
    expect(a.code, a.stderr).toBe(3);
    failing = new Set();
    mock.reset();
    const b = await start(p.dir, {}, "--reuse", a.runId);
    expect(b.code, b.stderr).toBe(0);
    expect(Object.keys(mock.counts()).sort()).toEqual(
      range(10, 20)
        .map((i) => `question ${i}`)
        .sort(),
    );
    expect(mock.requests).toHaveLength(10);
    expect((await show(p.dir, b.runId)).reuse).toMatchObject({
      reused: 10,
      notReused: [{ reason: "source outcome is an error", keys: 10 }],
    });
  });
});

describe("stet run --reuse on PostgreSQL", () => {
  it("reuses the unchanged keys with their trajectories, from the newest matching run", async () => {
    const p = project({ "eval.mjs": EVAL, "data.jsonl": rows(range(0, 10)) });
    const { url, db } = testSchemaPool();
    const a = await start(p.dir, {}, "--store", url);
    expect(a.code, a.stderr).toBe(0);
    mock.reset();
    writeFileSync(join(p.dir, "data.jsonl"), rows(range(0, 10), new Set([0, 1])));
    const b = await start(p.dir, {}, "--store", url, "--reuse", "latest");
    expect(b.code, b.stderr).toBe(0);
    expect(mock.requests).toHaveLength(2);
    const reused = await db.query<{ provenance_source: string; steps: string }>(
      `SELECT a.provenance_source,
              (SELECT count(*) FROM journal j WHERE j.run_id = a.run_id AND j.sample_id = a.sample_id
                 AND j.epoch = a.epoch AND j.attempt = a.attempt) AS steps
         FROM attempts a WHERE a.run_id = $1 AND a.provenance_kind = 'imported'`,
      [b.runId],
    );
    expect(reused.rows).toHaveLength(8);
    for (const row of reused.rows) {
      expect(row.provenance_source).toBe(`run:${a.runId}#1`);
      expect(Number(row.steps)).toBe(1);
    }
  });
});

describe("stet run --run-id <existing> --reuse", () => {
  it("goes on with a run started with the same --reuse, and refuses another (never ignores it)", async () => {
    const p = project({ "eval.mjs": EVAL, "data.jsonl": rows(range(0, 4)) });
    const a = await start(p.dir, {});
    expect(a.code, a.stderr).toBe(0);
    const plain = await start(p.dir, {}, "--run-id", "r_plain");
    expect(plain.code, plain.stderr).toBe(0);
    mock.reset();

    // A run started without --reuse: refused, and nothing is executed or recorded.
    const cli = (...args: string[]) =>
      runCli(["run", "eval.mjs", ...args], {
        cwd: p.dir,
        env: { MOCK_URL: mock.url, OPENAI_API_KEY: "sk-test" },
      });
    const refused = await cli("--run-id", "r_plain", "--reuse", a.runId);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain(
      `--run-id r_plain names an existing run that was started without --reuse; --reuse ${a.runId} only applies to a new run`,
    );
    expect(refused.stderr).not.toMatch(/\n\s+at /);
    expect(mock.requests).toHaveLength(0);
    expect((await show(p.dir, "r_plain")).reuse).toBeUndefined();

    // Started with --reuse: the same command again resumes it; another --reuse is refused.
    writeFileSync(join(p.dir, "data.jsonl"), rows(range(0, 6)));
    failing = new Set(["question 5"]);
    const b = await start(p.dir, {}, "--run-id", "r_b", "--reuse", a.runId);
    expect(b.code).toBe(3);
    expect(mock.requests).toHaveLength(2);
    failing = new Set();
    const other = await cli("--run-id", "r_b", "--reuse", "latest");
    expect(other.code).toBe(2);
    expect(other.stderr).toContain(`was started with --reuse ${a.runId}; --reuse latest`);
    expect(mock.requests).toHaveLength(2);
    const again = await start(p.dir, {}, "--run-id", "r_b", "--reuse", a.runId);
    expect(again.code, again.stderr).toBe(0);
    expect(mock.requests).toHaveLength(3);
    expect(await show(p.dir, "r_b")).toMatchObject({
      counts: { total: 6, scored: 6 },
      reuse: { source: a.runId, reused: 4 },
    });
  });
});

const HELPER_EVAL = `
import { appendFileSync } from "node:fs";
import { defineEval, scorers } from "stet";
import { answer } from "./lib/helper.ts";
export default defineEval({
  name: "helper",
  dataset: "./data.jsonl",
  solver: async function solve(sample) {
    appendFileSync(new URL("./calls.log", import.meta.url), sample.id + "\\n");
    if (Number(sample.id.slice(1)) >= Number(process.env.DOWN_FROM ?? 99)) throw new Error("down");
    return answer(sample.target);
  },
  scorers: [scorers.includes()],
});
`;

describe("identity covers the eval's local modules", () => {
  it("reuses nothing from before a helper module changed, and refuses to resume with it, naming it", async () => {
    const p = project({
      "eval.ts": HELPER_EVAL,
      "lib/helper.ts": `export const answer = (t: unknown): string => "the " + String(t);\n`,
      "data.jsonl": rows(range(0, 6)),
    });
    const calls = () => readFileSync(join(p.dir, "calls.log"), "utf8").trim().split("\n").length;
    const a = await runCli(["run", "eval.ts"], { cwd: p.dir, env: { DOWN_FROM: "4" } });
    expect(a.code, a.stderr).toBe(3);
    const runA = runIdOf(a.stdout);
    expect(calls()).toBe(6);
    // Unchanged, the helper's eval reuses the 4 scored keys.
    const same = await runCli(["run", "eval.ts", "--reuse", runA], { cwd: p.dir });
    expect(same.code, same.stderr).toBe(0);
    expect(calls()).toBe(8);

    appendFileSync(join(p.dir, "lib/helper.ts"), "// changed\n");
    const resumed = await runCli(["resume", runA], { cwd: p.dir });
    expect(resumed.code).not.toBe(0);
    expect(resumed.stderr).toMatch(/solver\.modules.*lib\/helper\.ts/);
    expect(calls()).toBe(8);

    const planned = await runCli(["plan", "eval.ts", "--reuse", runA], { cwd: p.dir });
    expect(planned.code, planned.stderr).toBe(0);
    expect(planned.stdout).toMatch(/6 not reused:\n\s+6 {2}solver\.modules: .*lib\/helper\.ts/);
    expect(planned.stdout).toContain("execute  6 keys");
    const b = await runCli(["run", "eval.ts", "--reuse", "latest", "--json"], { cwd: p.dir });
    expect(b.code, b.stderr).toBe(0);
    expect(calls()).toBe(14);
    const report = JSON.parse(b.stdout) as Shown;
    expect(report.reuse).toMatchObject({ source: null, reused: 0 });
    expect(report.reuse?.notReused[0]?.reason).toMatch(/solver\.modules.*lib\/helper\.ts/);
  });
});
