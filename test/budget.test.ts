import { existsSync } from "node:fs";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { runCli } from "./helpers/cli.js";
import { perTest, questions, rawAttempts, rawRun } from "./helpers/eval-project.js";
import { startMockOpenAI, type MockOpenAI } from "./helpers/mock-openai.js";

/**
 * Issue 14 item 4: the spend cap, through the real CLI against a local OpenAI-compatible server
 * that counts requests. Every request costs $0.01: 10 prompt tokens at $1000 per 1M.
 */
const N = 200;
const CONCURRENCY = 6;
const COST = 0.01;

const EVAL = `
import { defineEval, scorers, solvers } from "stet";
export default defineEval({
  name: "budget",
  dataset: "./data.jsonl",
  solver: solvers.chat({
    model: process.env.MODEL ?? "priced-model",
    baseURL: process.env.MOCK_URL,
    ...(process.env.MODEL ? {} : { prices: { input: 1000, output: 0 } }),
  }),
  scorers: [scorers.includes()],
  concurrency: ${CONCURRENCY},
  ...(process.env.MAX_COST ? { maxCost: Number(process.env.MAX_COST) } : {}),
});
`;

let mock: MockOpenAI;
beforeAll(async () => {
  mock = await startMockOpenAI({
    latencyMs: 15,
    reply: ({ key }) => key.replace("question", "answer"),
    usage: { prompt_tokens: 10, completion_tokens: 5 },
  });
});
afterAll(() => mock.close());
afterEach(() => mock.reset());

const { project } = perTest();
const runIdOf = (stdout: string) => stdout.match(/^run (r_\w+)/m)?.[1] ?? "";

async function show(dir: string, runId: string) {
  const shown = await runCli(["show", runId, "--json"], { cwd: dir });
  expect(shown.code, shown.stderr).toBe(0);
  return JSON.parse(shown.stdout) as {
    status: string;
    note: string | null;
    counts: { scored: number; remaining: number };
    usage: { totalSpent: { costUsd: number; attempts: number } };
    config: { maxCostUsd?: number };
  };
}

describe("--max-cost", () => {
  it("stops a priced 200-sample run at the cap (exit 6), keeps the cap on resume, finishes with a higher one", async () => {
    const p = project({ "eval.mjs": EVAL, "data.jsonl": questions(N) });
    const env = { MOCK_URL: mock.url, OPENAI_API_KEY: "sk-test" };
    const run = await runCli(["run", "eval.mjs", "--max-cost", "0.5"], { cwd: p.dir, env });
    expect(run.code, run.stderr).toBe(6);
    const runId = runIdOf(run.stdout);
    expect(run.stderr).toMatch(
      /budget: spent \$0\.\d+ of the \$0\.50 cap on the run \(the cap counts/,
    );
    expect(run.stderr).toMatch(new RegExp(`stet resume ${runId} --max-cost \\d+\\.\\d\\d\\n`));

    const stopped = await show(p.dir, runId);
    const spent = stopped.usage.totalSpent.costUsd;
    // The overshoot is at most the in-flight keys' cost; the cap is used, not left idle.
    expect(spent).toBeLessThanOrEqual(0.5 + CONCURRENCY * COST + 1e-9);
    expect(spent).toBeGreaterThan(0.5 - (CONCURRENCY + 1) * COST);
    expect(stopped.status).toBe("interrupted");
    expect(stopped.note).toMatch(/^budget: spent \$0\.\d+ of the \$0\.50 cap$/);
    expect(stopped.config.maxCostUsd).toBe(0.5);
    expect(stopped.counts.remaining).toBeGreaterThan(N / 2);
    // In-flight keys finished and were committed: one attempt per request, all scored.
    const first = mock.requests.length;
    expect(rawAttempts(p.db)).toHaveLength(first);
    expect(spent).toBeCloseTo(first * COST, 9);

    const shown = await runCli(["show", runId], { cwd: p.dir });
    expect(shown.stdout).toContain(`resume   stet resume ${runId} --max-cost <higher usd>`);

    // The cap is the run's, recorded with it: a resume without --max-cost stops at once.
    const again = await runCli(["resume", runId], { cwd: p.dir, env });
    expect(again.code, again.stderr).toBe(6);
    expect(mock.requests.length).toBe(first);

    const resumed = await runCli(["resume", runId, "--max-cost", "100"], { cwd: p.dir, env });
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(mock.requests.length).toBeLessThanOrEqual(N + CONCURRENCY);
    expect(mock.requests.length).toBe(N); // nothing bought twice
    const done = await show(p.dir, runId);
    expect(done).toMatchObject({ status: "completed", counts: { scored: N, remaining: 0 } });
    expect(done.usage.totalSpent.costUsd).toBeCloseTo(N * COST, 9);
    // An override is this invocation's: the run keeps the cap it was started with.
    expect(done.config.maxCostUsd).toBe(0.5);
  }, 120_000);

  it("maxCost in defineEval caps the run; --json reports the stop with reason budget", async () => {
    const p = project({ "eval.mjs": EVAL, "data.jsonl": questions(40) });
    const env = { MOCK_URL: mock.url, OPENAI_API_KEY: "sk-test", MAX_COST: "0.1" };
    const run = await runCli(["run", "eval.mjs", "--json"], { cwd: p.dir, env });
    expect(run.code, run.stderr).toBe(6);
    const report = JSON.parse(run.stdout.slice(run.stdout.indexOf("{"))) as {
      budget: { spentUsd: number };
      usage: { totalSpent: { costUsd: number } };
    };
    expect(report).toMatchObject({
      status: "interrupted",
      stopped: { reason: "budget", note: expect.stringMatching(/^budget: spent/) },
      budget: { maxCostUsd: 0.1, reached: true },
    });
    expect(report.budget.spentUsd).toBeLessThanOrEqual(0.1 + CONCURRENCY * COST + 1e-9);
    expect(report.budget.spentUsd).toBe(report.usage.totalSpent.costUsd);

    // --max-cost overrides the eval's cap: this run finishes.
    const higher = await runCli(["run", "eval.mjs", "--max-cost", "5"], { cwd: p.dir, env });
    expect(higher.code, higher.stderr).toBe(0);
    expect(rawRun(p.db, runIdOf(higher.stdout))).toMatchObject({ status: "completed" });
  }, 60_000);

  it("warns once when the run's model has no price, and the cap cannot stop it", async () => {
    const p = project({ "eval.mjs": EVAL, "data.jsonl": questions(20) });
    const env = { MOCK_URL: mock.url, OPENAI_API_KEY: "sk-test", MODEL: "no-such-priced-model" };
    const run = await runCli(["run", "eval.mjs", "--max-cost", "0.01"], { cwd: p.dir, env });
    expect(run.code, run.stderr).toBe(0);
    const warnings = run.stderr.match(/warning: the spend cap \(\$0\.01\) cannot count/g) ?? [];
    expect(warnings).toHaveLength(1);
    expect(run.stderr).toContain("15 tokens at no known price");
    expect(mock.requests).toHaveLength(20);
  }, 60_000);

  it.each([["-1"], ["abc"], ["0"], ["1e3"], [""]])(
    "refuses --max-cost %j with exit 2 naming the flag, creating nothing",
    async (value) => {
      const p = project({ "eval.mjs": EVAL, "data.jsonl": questions(3) });
      const env = { MOCK_URL: mock.url, OPENAI_API_KEY: "sk-test" };
      for (const args of [
        ["run", "eval.mjs", "--max-cost", value],
        ["resume", "r_whatever", "--max-cost", value],
      ]) {
        const result = await runCli(args, { cwd: p.dir, env });
        expect(result.code, result.stderr).toBe(2);
        expect(result.stderr).toContain("--max-cost");
        expect(result.stderr).toContain(
          "expected a number of US dollars above 0, at most 1000000000",
        );
      }
      expect(existsSync(p.db)).toBe(false);
      expect(mock.requests).toHaveLength(0);
    },
  );
});
