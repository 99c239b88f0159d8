import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli } from "./helpers/cli.js";
import { perTest } from "./helpers/eval-project.js";
import { startMockOpenAI, type MockOpenAI } from "./helpers/mock-openai.js";

// A model with no price (neither `prices` nor the built-in table) records its tokens and no cost:
// every total, summary and export says the cost is unknown, never $0. Through the real CLI against
// a local OpenAI-compatible server that counts requests.

const { project } = perTest();
let mock: MockOpenAI;
beforeAll(async () => {
  mock = await startMockOpenAI({ usage: { prompt_tokens: 100, completion_tokens: 20 } });
});
afterAll(() => mock.close());

const DATASET = `[
    { id: "q1", input: "q1", target: "q1" },
    { id: "q2", input: "q2", target: "q2" },
    { id: "q3", input: "q3", target: "q3" },
  ]`;

/** Every sample sent to an unpriced model. */
const UNPRICED = `import { defineEval, scorers, solvers } from "stet";
export default defineEval({
  name: "unpriced",
  dataset: ${DATASET},
  solver: solvers.chat({ model: "house-model-7b", baseURL: process.env.MOCK_URL, apiKey: "sk-test", maxRetries: 0 }),
  scorers: [scorers.exact()],
});
`;

/** q1 and q2 to a priced model (gpt-4o-mini: $0.15 / $0.60 per 1M), q3 to an unpriced one. */
const MIXED = `import { defineEval, scorers } from "stet";
export default defineEval({
  name: "mixed",
  dataset: ${DATASET},
  solver: async (sample, ctx) => {
    const model = sample.id === "q3" ? "house-model-7b" : "gpt-4o-mini";
    const reply = await ctx.chat({ model, baseURL: process.env.MOCK_URL, apiKey: "sk-test",
      maxRetries: 0, messages: [{ role: "user", content: sample.input }] });
    return reply.content;
  },
  scorers: [scorers.exact()],
});
`;

/** A priced solver (gpt-4o-mini) and a judge-like scorer that used tokens with no price. */
const UNPRICED_JUDGE = `import { defineEval, solvers } from "stet";
export default defineEval({
  name: "unpriced-judge",
  dataset: ${DATASET},
  solver: solvers.chat({ model: "gpt-4o-mini", baseURL: process.env.MOCK_URL, apiKey: "sk-test", maxRetries: 0 }),
  scorers: [{ name: "judge", score: () => ({ value: 1, usage: { inputTokens: 50, outputTokens: 5 } }) }],
});
`;

interface Total {
  attempts: number;
  inputTokens: number;
  outputTokens: number;
  costUsd: number | null;
  unpriced: number;
}

async function runEval(text: string) {
  const p = project({ "eval.mjs": text });
  const env = { MOCK_URL: mock.url };
  mock.reset();
  const run = await runCli(["run", "eval.mjs"], { cwd: p.dir, env });
  expect(run.code, run.stderr).toBe(0);
  expect(mock.requests.length).toBe(3);
  const runId = run.stdout.match(/^run (r_\w+)/m)![1]!;
  const cli = async (...args: string[]) => {
    const result = await runCli(args, { cwd: p.dir, env });
    expect(result.code, result.stderr).toBe(0);
    return result.stdout;
  };
  return { run, runId, cli };
}

function costLine(text: string): string {
  return text.split("\n").find((l) => l.startsWith("cost "))!;
}

describe("a model without a price", () => {
  it("has cost null in show --json, 'unknown' in every summary and null in every export", async () => {
    const { run, runId, cli } = await runEval(UNPRICED);
    // The run's own summary: tokens counted, cost unknown, and a hint how to price it.
    expect(run.stdout).toContain("tokens   300 in · 60 out");
    expect(costLine(run.stdout)).toBe(
      "cost     unknown (3 attempts unpriced) spent now · unknown (3 attempts unpriced) total on this run · " +
        "$0.00 reused (not re-bought)",
    );
    expect(run.stdout).toContain("give the solver or judge `prices`");
    // The progress line (plain lines on stderr when it is not a terminal) says so too.
    expect(run.stderr).toMatch(/^3\/3 · .* · errors 0 · unknown$/m);

    const shown = JSON.parse(await cli("show", runId, "--json")) as {
      usage: Record<"spentNow" | "totalSpent" | "reused", Total>;
    };
    expect(shown.usage.totalSpent).toEqual({
      attempts: 3,
      inputTokens: 300,
      outputTokens: 60,
      cachedInputTokens: 0,
      cacheWriteTokens: 0,
      reasoningTokens: 0,
      costUsd: null,
      unpriced: 3,
    });
    // Seen from `show`, no invocation reused anything: the run's outcomes are its own spend.
    expect(shown.usage.reused).toMatchObject({ attempts: 0 });
    const text = await cli("show", runId);
    // What the run spent is unknown: never "$0".
    expect(costLine(text)).toBe(
      "cost     unknown (3 attempts unpriced) spent on this run (every invocation)",
    );

    const rows = (await cli("export", runId))
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as { usage: unknown });
    expect(rows.map((r) => r.usage)).toEqual(
      Array(3).fill({ inputTokens: 100, outputTokens: 20, costUsd: null }),
    );
    const csv = (await cli("export", runId, "--format", "csv")).trim().split("\n");
    const header = csv[0]!.split(",");
    const at = header.indexOf("costUsd");
    expect(at).toBeGreaterThan(0);
    // An empty cell, not 0: a spreadsheet or pandas reads it as missing.
    for (const line of csv.slice(1)) expect(line.split(",")[at]).toBe("");
    const resultSet = JSON.parse(await cli("export", runId, "--format", "resultset")) as {
      results: { metadata: { openeval: { cost: unknown } } }[];
    };
    expect(resultSet.results.map((r) => r.metadata.openeval.cost)).toEqual(
      Array(3).fill({ input_tokens: 100, output_tokens: 20, estimated_cost_usd: null }),
    );
  });

  it("beside priced attempts: the priced part as a lower bound, ≥ $x, and the unpriced counted", async () => {
    const { run, runId, cli } = await runEval(MIXED);
    const priced = (2 * (100 * 0.15 + 20 * 0.6)) / 1_000_000; // two gpt-4o-mini calls
    const shown = JSON.parse(await cli("show", runId, "--json")) as {
      usage: Record<"spentNow" | "totalSpent" | "reused", Total>;
    };
    expect(shown.usage.totalSpent.unpriced).toBe(1);
    expect(shown.usage.totalSpent.costUsd).toBeCloseTo(priced, 15);
    expect(costLine(run.stdout)).toContain("≥ $0.000054 (1 attempt unpriced) spent now");
    expect(run.stderr).toMatch(/^3\/3 · .* · errors 0 · ≥ \$0\.000054$/m);
    expect(costLine(await cli("show", runId))).toContain(
      "≥ $0.000054 (1 attempt unpriced) spent on this run",
    );
    const rows = (await cli("export", runId))
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as { sampleId: string; usage: { costUsd: number | null } });
    expect(rows.map((r) => [r.sampleId, r.usage.costUsd === null])).toEqual([
      ["q1", false],
      ["q2", false],
      ["q3", true],
    ]);
  });

  it("in one part of an attempt (an unpriced judge of a priced solver): the attempt's cost is unknown", async () => {
    const { run, runId, cli } = await runEval(UNPRICED_JUDGE);
    const shown = JSON.parse(await cli("show", runId, "--json")) as {
      usage: Record<"totalSpent", Total>;
    };
    expect(shown.usage.totalSpent).toEqual({
      attempts: 3,
      inputTokens: 450,
      outputTokens: 75,
      cachedInputTokens: 0,
      cacheWriteTokens: 0,
      reasoningTokens: 0,
      costUsd: null,
      unpriced: 3,
    });
    expect(costLine(run.stdout)).toContain("unknown (3 attempts unpriced) spent now");
  });
});
