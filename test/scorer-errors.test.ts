import Database from "better-sqlite3";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli } from "./helpers/cli.js";
import { perTest, questions } from "./helpers/eval-project.js";
import { startMockOpenAI, type MockOpenAI, type MockUsage } from "./helpers/mock-openai.js";

/**
 * Issue 26 item 4, through the real CLI against a local OpenAI-compatible server that counts
 * requests: a judge whose reply cannot be parsed was still paid for (its usage is stored and
 * counts towards the run's spend and its cap), and a failing scorer makes only its own score
 * an error: the other scores of the same attempt stand, and a resume asks only that judge again.
 */

const SOLVER_USAGE: MockUsage = { prompt_tokens: 10, completion_tokens: 5 };
const JUDGE_USAGE: MockUsage = { prompt_tokens: 100, completion_tokens: 20 };

let mock: MockOpenAI;
/** Judge models whose replies carry a grade; the others answer without one. */
const grading = new Set<string>();
/** What the server reported as used, per model, summed over the replies it served. */
let served: Record<string, { input: number; output: number; requests: number }> = {};

beforeAll(async () => {
  mock = await startMockOpenAI({
    respond: ({ key, body }) => {
      const model = String(body.model);
      const solver = model === "solver-model";
      const usage = solver ? SOLVER_USAGE : JUDGE_USAGE;
      const tally = (served[model] ??= { input: 0, output: 0, requests: 0 });
      tally.input += usage.prompt_tokens;
      tally.output += usage.completion_tokens;
      tally.requests++;
      if (solver) return { reply: key.replace("question", "answer"), usage };
      const verdict = grading.has(model) ? "\nGRADE: C" : "";
      return { reply: `The submission matches the reference.${verdict}`, usage };
    },
  });
});
afterAll(() => mock.close());

function resetServer(): void {
  mock.reset();
  served = {};
  grading.clear();
}

const { project } = perTest();
const runIdOf = (stdout: string) => /^run (r_\w+)/m.exec(stdout)?.[1] ?? "";

/** An eval with a chat solver and the given scorers; prices make each call's cost known. */
function evalFile(scorersSource: string, extra = ""): string {
  return `import { defineEval, scorers, solvers } from "stet";
const judge = (name, model) => scorers.modelGraded({
  name, model, baseURL: ${JSON.stringify(mock.url)}, apiKey: "sk-test", prices: { input: 1000, output: 0 },
});
export default defineEval({
  name: "judged",
  dataset: "./data.jsonl",
  solver: solvers.chat({ model: "solver-model", baseURL: ${JSON.stringify(mock.url)}, apiKey: "sk-test", prices: { input: 1000, output: 0 } }),
  scorers: ${scorersSource},
  ${extra}
});
`;
}

interface Shown {
  status: string;
  metrics: { scorer: string; mean: number | null; samples: number }[];
  counts: { scored: number; errored: number; remaining: number };
  usage: { totalSpent: { inputTokens: number; outputTokens: number; costUsd: number | null } };
}

async function show(dir: string, runId: string): Promise<Shown> {
  const shown = await runCli(["show", runId, "--json"], { cwd: dir });
  expect(shown.code, shown.stderr).toBe(0);
  return JSON.parse(shown.stdout) as Shown;
}

interface ExportedScore {
  scorer: string;
  value: number | null;
  error?: string;
}

async function exportedScores(dir: string, runId: string): Promise<ExportedScore[][]> {
  const exported = await runCli(["export", runId, "--format", "jsonl"], { cwd: dir });
  expect(exported.code, exported.stderr).toBe(0);
  return exported.stdout
    .trim()
    .split("\n")
    .map((line) => (JSON.parse(line) as { scores: ExportedScore[] }).scores);
}

/** The tokens the store holds: every attempt's usage and every scoring's, as rows. */
function storedTokens(db: string): { input: number; output: number } {
  const conn = new Database(db, { readonly: true, fileMustExist: true });
  try {
    const sum = (table: string) =>
      conn
        .prepare(
          `SELECT COALESCE(SUM(input_tokens), 0) AS input, COALESCE(SUM(output_tokens), 0) AS output FROM ${table}`,
        )
        .get() as { input: number; output: number };
    const attempts = sum("attempts");
    const scorings = sum("scorings");
    return { input: attempts.input + scorings.input, output: attempts.output + scorings.output };
  } finally {
    conn.close();
  }
}

/** What the server reported as used, over every model. */
function servedTokens(): { input: number; output: number } {
  const all = Object.values(served);
  return {
    input: all.reduce((n, t) => n + t.input, 0),
    output: all.reduce((n, t) => n + t.output, 0),
  };
}

const requestsOf = (model: string) => served[model]?.requests ?? 0;

describe("a judge's spend and a scorer's error", () => {
  it("a judge whose reply has no grade line: its usage is stored, exact stays in the metrics, resume asks only the judge", async () => {
    resetServer();
    const p = project({
      "data.jsonl": questions(5),
      "eval.mjs": evalFile(`[scorers.exact(), judge("model_graded", "judge-model")]`),
    });
    const run = await runCli(["run", "eval.mjs"], { cwd: p.dir });
    expect(run.code, run.stderr).toBe(3);
    const runId = runIdOf(run.stdout);
    expect(requestsOf("solver-model")).toBe(5);
    expect(requestsOf("judge-model")).toBe(5);

    // Every token the server reported is in the store: the solver's and the judge's.
    expect(storedTokens(p.db)).toEqual(servedTokens());
    expect(servedTokens()).toEqual({ input: 5 * 10 + 5 * 100, output: 5 * 5 + 5 * 20 });
    const shown = await show(p.dir, runId);
    expect(shown.usage.totalSpent).toMatchObject({ inputTokens: 550, outputTokens: 125 });
    expect(shown.usage.totalSpent.costUsd).toBeCloseTo(0.55, 10);
    // exact's scores stand; the judge's metric has no sample, each key holds its error.
    expect(shown.metrics).toEqual([
      expect.objectContaining({ scorer: "exact", mean: 1, samples: 5 }),
      expect.objectContaining({ scorer: "model_graded", mean: null, samples: 0 }),
    ]);
    expect(shown.counts).toMatchObject({ scored: 0, errored: 5 });
    const rows = await exportedScores(p.dir, runId);
    expect(rows).toHaveLength(5);
    for (const scores of rows) {
      expect(scores).toEqual([
        expect.objectContaining({ scorer: "exact", value: 1 }),
        {
          scorer: "model_graded",
          value: null,
          error: expect.stringContaining("the judge's reply has no GRADE line") as string,
        },
      ]);
    }

    // The judge still gives no grade: a resume asks it again, never the solver, and its spend
    // is the scorings'.
    resetServer();
    const again = await runCli(["resume", runId], { cwd: p.dir });
    expect(again.code, again.stderr).toBe(3);
    expect(again.stdout).toContain("5 scorer error(s) to score again");
    expect(requestsOf("solver-model")).toBe(0);
    expect(requestsOf("judge-model")).toBe(5);
    expect(storedTokens(p.db)).toEqual({ input: 550 + 500, output: 125 + 100 });

    // Now it grades: only the judge is asked, and every key ends scored.
    resetServer();
    grading.add("judge-model");
    const resumed = await runCli(["resume", runId], { cwd: p.dir });
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(requestsOf("solver-model")).toBe(0);
    expect(requestsOf("judge-model")).toBe(5);
    expect(storedTokens(p.db)).toEqual({ input: 550 + 1000, output: 125 + 200 });
    const done = await show(p.dir, runId);
    expect(done.status).toBe("completed");
    expect(done.counts).toMatchObject({ scored: 5, errored: 0, remaining: 0 });
    expect(done.metrics).toEqual([
      expect.objectContaining({ scorer: "exact", mean: 1, samples: 5 }),
      expect.objectContaining({ scorer: "model_graded", mean: 1, samples: 5 }),
    ]);
    expect(done.usage.totalSpent).toMatchObject({ inputTokens: 1550, outputTokens: 325 });
  });

  it("one failing judge among two: the other judge runs and is never bought again on resume", async () => {
    resetServer();
    grading.add("good-judge");
    const p = project({
      "data.jsonl": questions(5),
      "eval.mjs": evalFile(
        `[scorers.exact(), judge("bad", "bad-judge"), judge("good", "good-judge")]`,
      ),
    });
    const run = await runCli(["run", "eval.mjs"], { cwd: p.dir });
    expect(run.code, run.stderr).toBe(3);
    const runId = runIdOf(run.stdout);
    // The failing judge does not stop the scorers after it.
    expect(requestsOf("bad-judge")).toBe(5);
    expect(requestsOf("good-judge")).toBe(5);
    expect(storedTokens(p.db)).toEqual(servedTokens());
    const shown = await show(p.dir, runId);
    expect(shown.metrics.map((m) => [m.scorer, m.mean, m.samples])).toEqual([
      ["exact", 1, 5],
      ["bad", null, 0],
      ["good", 1, 5],
    ]);

    resetServer();
    grading.add("bad-judge");
    const resumed = await runCli(["resume", runId], { cwd: p.dir });
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(requestsOf("solver-model")).toBe(0);
    expect(requestsOf("bad-judge")).toBe(5);
    expect(requestsOf("good-judge")).toBe(0);
    const done = await show(p.dir, runId);
    expect(done.status).toBe("completed");
    expect(done.metrics.map((m) => [m.scorer, m.mean, m.samples])).toEqual([
      ["exact", 1, 5],
      ["bad", 1, 5],
      ["good", 1, 5],
    ]);
  });

  it("a failed judge's cost counts towards the spend cap", async () => {
    resetServer();
    // Each attempt costs $0.01 for the solver and $0.10 for its judge: under a $0.20 cap the
    // second key would pass it, so only the first one is bought.
    const p = project({
      "data.jsonl": questions(5),
      "eval.mjs": evalFile(
        `[scorers.exact(), judge("model_graded", "judge-model")]`,
        "concurrency: 1, maxCost: 0.2,",
      ),
    });
    const run = await runCli(["run", "eval.mjs"], { cwd: p.dir });
    expect(run.code, run.stdout + run.stderr).toBe(6);
    const runId = runIdOf(run.stdout);
    expect(requestsOf("solver-model")).toBe(1);
    expect(requestsOf("judge-model")).toBe(1);
    const shown = await show(p.dir, runId);
    expect(shown.usage.totalSpent.costUsd).toBeCloseTo(0.11, 10);
    expect(storedTokens(p.db)).toEqual(servedTokens());
  });
});
