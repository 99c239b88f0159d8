import Database from "better-sqlite3";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createApp } from "../src/server/create-app.js";
import { openSqliteStore } from "../src/store/sqlite/index.js";
import { runCli, startCli } from "./helpers/cli.js";
import { perTest, questions, rawAttempts } from "./helpers/eval-project.js";
import { startMockOpenAI, type MockOpenAI } from "./helpers/mock-openai.js";
import { until } from "./helpers/wait.js";

/**
 * Issue 29 items 4 and 5 through the real CLI, against a local OpenAI-format server: usage read
 * with its cached and reasoning tokens and priced by tier (the spend cap counts that price), and
 * an attempt's usage as its whole trajectory, replayed journal calls included.
 */

const { project } = perTest();
const runIdOf = (stdout: string) => stdout.match(/^run (r_\w+)/m)?.[1] ?? "";
const jsonOf = <T>(stdout: string): T => JSON.parse(stdout.slice(stdout.indexOf("{"))) as T;

interface Figures {
  inputTokens: number;
  outputTokens: number;
  cachedInputTokens?: number;
  cacheWriteTokens?: number;
  reasoningTokens?: number;
  costUsd: number | null;
}
type ExportedUsage = Figures & { reused?: Figures };
interface ExportRow {
  sampleId: string;
  output: string;
  usage: ExportedUsage | null;
}
interface Total {
  attempts: number;
  inputTokens: number;
  outputTokens: number;
  cachedInputTokens: number;
  cacheWriteTokens: number;
  reasoningTokens: number;
  costUsd: number | null;
}
interface Report {
  runId: string;
  counts: { scored: number };
  usage: { spentNow: Total; totalSpent: Total; reused: Total };
  journal?: { replayed: number; reused: Total };
}

async function exported(dir: string, runId: string): Promise<ExportRow[]> {
  const out = await runCli(["export", runId, "--format", "jsonl"], { cwd: dir });
  expect(out.code, out.stderr).toBe(0);
  return out.stdout
    .trim()
    .split("\n")
    .map((line) => JSON.parse(line) as ExportRow);
}

describe("usage priced by tier", () => {
  // The acceptance reply: 1000 prompt tokens of which 800 cached, 100 completion of which 40
  // reasoning.
  const USAGE = {
    prompt_tokens: 1000,
    completion_tokens: 100,
    prompt_tokens_details: { cached_tokens: 800 },
    completion_tokens_details: { reasoning_tokens: 40 },
  };
  const PRICE = { input: 100, cachedInput: 10, output: 400 };
  // 200 uncached, 800 cached, 100 out: $0.068 a sample; at list price (all input uncached) $0.14.
  const TRUE_COST = (200 * PRICE.input + 800 * PRICE.cachedInput + 100 * PRICE.output) / 1e6;
  const EVAL = `
import { defineEval, scorers, solvers } from "stet";
export default defineEval({
  name: "tiers",
  dataset: "./data.jsonl",
  solver: solvers.chat({
    model: process.env.MODEL ?? "tiered-model",
    baseURL: process.env.MOCK_URL,
    ...(process.env.MODEL ? {} : { prices: ${JSON.stringify(PRICE)} }),
  }),
  scorers: [scorers.includes()],
  concurrency: 1,
});
`;
  let mock: MockOpenAI;
  beforeAll(async () => {
    mock = await startMockOpenAI({ usage: USAGE });
  });
  afterAll(() => mock.close());

  it("records cached and reasoning tokens, costs 200·input + 800·cachedInput + 100·output, and a cap at N such samples runs N", async () => {
    const N = 5;
    const p = project({ "eval.mjs": EVAL, "data.jsonl": questions(12) });
    const env = { MOCK_URL: mock.url, OPENAI_API_KEY: "sk-test" };
    const cap = String(N * TRUE_COST);
    const run = await runCli(["run", "eval.mjs", "--max-cost", cap], { cwd: p.dir, env });
    expect(run.code, run.stderr).toBe(6);
    expect(mock.requests).toHaveLength(N);
    expect(run.stdout).toMatch(/^tokens +5,000 in \(4,000 cached\) · 500 out \(200 reasoning\)/m);

    const rows = await exported(p.dir, runIdOf(run.stdout));
    expect(rows).toHaveLength(N);
    for (const row of rows) {
      expect(row.usage).toMatchObject({
        inputTokens: 1000,
        cachedInputTokens: 800,
        outputTokens: 100,
        reasoningTokens: 40,
      });
      expect(Math.abs(row.usage!.costUsd! - TRUE_COST)).toBeLessThan(1e-12);
    }
    const runId = runIdOf(run.stdout);
    const shown = await runCli(["show", runId, "--json"], { cwd: p.dir });
    const totals = {
      attempts: N,
      inputTokens: N * 1000,
      cachedInputTokens: N * 800,
      reasoningTokens: N * 40,
    };
    expect(jsonOf<Report>(shown.stdout).usage.totalSpent).toMatchObject(totals);
    expect((await runCli(["show", runId], { cwd: p.dir })).stdout).toMatch(
      /^tokens +5,000 in \(4,000 cached\) · 500 out \(200 reasoning\) \(all attempts\)$/m,
    );

    // The API's run detail and samples carry the same figures.
    const store = openSqliteStore(p.db, { create: false });
    try {
      const app = createApp({ store });
      const detail = (await (await app.request(`/api/runs/${runId}`)).json()) as {
        cost: { spent: Total };
      };
      expect(detail.cost.spent).toMatchObject(totals);
      const samples = (await (await app.request(`/api/runs/${runId}/samples`)).json()) as {
        samples: { outcome: { usage: Figures } | null }[];
      };
      const outcomes = samples.samples.filter((x) => x.outcome).map((x) => x.outcome!.usage);
      expect(outcomes).toHaveLength(N);
      expect(outcomes[0]).toMatchObject({ cachedInputTokens: 800, reasoningTokens: 40 });
    } finally {
      await store.close();
    }
  }, 60_000);

  it("prices a built-in model's cached input from the table; an unknown tier price leaves the cost unknown", async () => {
    const p = project({ "eval.mjs": EVAL, "data.jsonl": questions(2) });
    const env = { MOCK_URL: mock.url, OPENAI_API_KEY: "sk-test", MODEL: "gpt-4.1-mini" };
    const run = await runCli(["run", "eval.mjs"], { cwd: p.dir, env });
    expect(run.code, run.stderr).toBe(0);
    const [row] = await exported(p.dir, runIdOf(run.stdout));
    // gpt-4.1-mini: $0.40 input, $0.10 cached input, $1.60 output per 1M.
    const expected = (200 * 0.4 + 800 * 0.1 + 100 * 1.6) / 1e6;
    expect(Math.abs(row!.usage!.costUsd! - expected)).toBeLessThan(1e-12);

    // gpt-4-turbo has no published cached-input price: the cached tokens make the cost unknown.
    const old = await runCli(["run", "eval.mjs"], {
      cwd: p.dir,
      env: { ...env, MODEL: "gpt-4-turbo" },
    });
    expect(old.code, old.stderr).toBe(0);
    const [unpriced] = await exported(p.dir, runIdOf(old.stdout));
    expect(unpriced!.usage).toMatchObject({ inputTokens: 1000, costUsd: null });
    expect(old.stdout).toMatch(/^cost +unknown/m);
  }, 60_000);
});

describe("an attempt's usage is its whole trajectory", () => {
  const N = 6;
  const ROUNDS = 4;
  const BLOCK_AT = 2;
  const PRICES = { input: 2, cachedInput: 0.5, output: 8 };
  // An agent of ROUNDS ctx.chat calls per sample. With BLOCK=1 the odd samples hang before
  // round BLOCK_AT (their first calls journaled) while the even ones finish.
  const EVAL = `
import { defineEval } from "stet";
export default defineEval({
  name: "agent-usage",
  dataset: "./data.jsonl",
  concurrency: ${N},
  solver: async (sample, ctx) => {
    const messages = [{ role: "user", content: sample.input + " round 0" }];
    let reply = "";
    for (let r = 0; r < ${ROUNDS}; r++) {
      if (process.env.BLOCK === "1" && r === ${BLOCK_AT} && Number(sample.id.slice(1)) % 2 === 1) {
        await new Promise(() => setInterval(() => {}, 1000));
      }
      const prices = ${JSON.stringify(PRICES)};
      reply = (await ctx.chat({ model: "agent-model", baseURL: process.env.MOCK_URL, messages, prices })).content;
      messages.push({ role: "assistant", content: reply });
      messages.push({ role: "user", content: sample.input + " round " + (r + 1) });
    }
    return reply;
  },
  scorers: [function finished({ output }) { return output.includes("round ${ROUNDS - 1}"); }],
});
`;
  const data = Array.from({ length: N }, (_, i) =>
    JSON.stringify({ id: `s${i}`, input: `task ${i}` }),
  ).join("\n");
  let mock: MockOpenAI;
  beforeAll(async () => {
    // Each call's usage differs (by its prompt), with cached and reasoning tokens.
    mock = await startMockOpenAI({
      respond: ({ key }) => ({
        reply: `re: ${key}`,
        usage: {
          prompt_tokens: 100 + key.length,
          completion_tokens: 20 + (key.length % 7),
          prompt_tokens_details: { cached_tokens: 64 },
          completion_tokens_details: { reasoning_tokens: key.length % 5 },
        },
      }),
    });
  });
  afterAll(() => mock.close());

  const openSteps = (db: string): number => {
    const conn = new Database(db, { readonly: true, fileMustExist: true });
    try {
      return (
        conn.prepare("SELECT COUNT(*) AS n FROM journal WHERE attempt IS NULL").get() as {
          n: number;
        }
      ).n;
    } catch {
      return 0; // the schema is not there yet
    } finally {
      conn.close();
    }
  };

  it("killed mid-trajectory and resumed, exports the uninterrupted run's per-sample usage; spent now plus reused is its total", async () => {
    const env = { MOCK_URL: mock.url, OPENAI_API_KEY: "sk-test" };
    const plain = project({ "eval.mjs": EVAL, "data.jsonl": data });
    const clean = await runCli(["run", "eval.mjs", "--json"], { cwd: plain.dir, env });
    expect(clean.code, clean.stderr).toBe(0);
    const cleanReport = jsonOf<Report>(clean.stdout);
    const total = cleanReport.usage.totalSpent;
    const expected = await exported(plain.dir, cleanReport.runId);
    expect(mock.requests).toHaveLength(N * ROUNDS);
    mock.reset();

    const p = project({ "eval.mjs": EVAL, "data.jsonl": data });
    const cli = startCli(["run", "eval.mjs"], { cwd: p.dir, env: { ...env, BLOCK: "1" } });
    const runId = (await cli.waitFor(/^run (r_\w+)/m))[1]!;
    // The even samples committed, the odd ones hang with their first BLOCK_AT calls journaled.
    const odd = N / 2;
    await until(
      () => rawAttempts(p.db).length === N - odd && openSteps(p.db) === odd * BLOCK_AT,
      "the even samples' attempts and the odd ones' journaled calls",
      60_000,
    );
    cli.child.kill("SIGKILL");
    expect((await cli.done).signal).toBe("SIGKILL");

    const resumed = await runCli(["resume", runId, "--json"], { cwd: p.dir, env });
    expect(resumed.code, resumed.stderr).toBe(0);
    // Nothing bought twice: the replayed calls were asked once, by the killed process.
    expect(mock.requests).toHaveLength(N * ROUNDS);

    // Per sample, the same usage as uninterrupted (tokens of every tier, and cost); the resumed
    // samples say which part of it was replayed.
    const rows = await exported(p.dir, runId);
    const withoutReused = (r: ExportRow) => {
      const { reused: _reused, ...usage } = r.usage!;
      return [r.sampleId, r.output, usage];
    };
    expect(rows.map(withoutReused)).toEqual(expected.map(withoutReused));
    for (const row of rows) {
      const resumedSample = Number(row.sampleId.slice(1)) % 2 === 1;
      if (!resumedSample) expect(row.usage).not.toHaveProperty("reused");
      else expect(row.usage!.reused).toMatchObject({ cachedInputTokens: BLOCK_AT * 64 });
    }

    // The resume's figures: what it bought and what it reused (the even samples' outcomes and
    // the odd ones' replayed calls) add up to the uninterrupted total, counted once.
    const report = jsonOf<Report>(resumed.stdout);
    const { spentNow, reused, totalSpent } = report.usage;
    const replayed = report.journal!.reused;
    expect(report.journal!.replayed).toBe(odd * BLOCK_AT);
    expect(reused.attempts).toBe(N - odd);
    for (const figure of [
      "inputTokens",
      "outputTokens",
      "cachedInputTokens",
      "reasoningTokens",
    ] as const) {
      expect(spentNow[figure] + reused[figure]).toBe(total[figure]);
      expect(totalSpent[figure]).toBe(total[figure]);
      expect(replayed[figure]).toBeLessThan(reused[figure]); // a part of it
    }
    expect(spentNow.costUsd! + reused.costUsd!).toBeCloseTo(total.costUsd!, 12);
    expect(totalSpent.costUsd).toBeCloseTo(total.costUsd!, 12);
    // What this invocation bought is what the mock served it: the odd samples' later rounds.
    const boughtNow = odd * (ROUNDS - BLOCK_AT);
    expect(spentNow.cachedInputTokens).toBe(boughtNow * 64);
    const shown = await runCli(["show", runId, "--json"], { cwd: p.dir });
    expect(jsonOf<Report>(shown.stdout).usage.totalSpent).toMatchObject({
      inputTokens: total.inputTokens,
      cachedInputTokens: total.cachedInputTokens,
    });
  }, 120_000);
});
