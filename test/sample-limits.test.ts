import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { RunReport } from "../src/core/events.js";
import { runCli } from "./helpers/cli.js";
import { perTest, rawAttempts } from "./helpers/eval-project.js";
import { startMockOpenAI, type MockOpenAI } from "./helpers/mock-openai.js";

const N = 3;

/**
 * An agent whose model always calls its `ping` tool: it never answers, so only a limit (or
 * maxTurns, left at its default of 50) ends it. `LIMITS` is the eval's `limits`, as JSON.
 */
const EVAL = `
import { appendFileSync } from "node:fs";
import { defineEval, solvers } from "stet";
export default defineEval({
  name: "limits",
  dataset: "./data.jsonl",
  concurrency: 2,
  limits: JSON.parse(process.env.LIMITS),
  solver: solvers.agent({
    model: process.env.MODEL ?? "gpt-4o-mini",
    baseURL: process.env.MOCK_URL,
    tools: {
      ping: {
        description: "ping",
        parameters: { type: "object", properties: {} },
        execute: (_args, ctx) => { appendFileSync(process.env.TOOL_LOG, ctx.sample.id + "\\n"); return "pong"; },
      },
    },
  }),
  scorers: [function soFar({ output }) { return output.startsWith("step"); }],
});
`;

const data = (ids: string[]) => ids.map((id) => JSON.stringify({ id, input: id })).join("\n");

/** 20,000 input and 2,000 output tokens of gpt-4o-mini ($0.15 and $0.60 per 1M): $0.0042. */
const USAGE = { prompt_tokens: 20_000, completion_tokens: 2_000 };
const CALL_USD = (20_000 * 0.15 + 2_000 * 0.6) / 1e6;

/**
 * Each call's usage by the request's format: on the Messages API (claude-haiku-4-5, $1 and $5
 * per 1M), 2,000 input and 200 output tokens: $0.003.
 */
const FORMATS = {
  openai: { model: "gpt-4o-mini", usage: USAGE, callUsd: CALL_USD },
  anthropic: {
    model: "anthropic:claude-haiku-4-5",
    usage: { prompt_tokens: 2_000, completion_tokens: 200 },
    callUsd: (2_000 * 1 + 200 * 5) / 1e6,
  },
} as const;

/** Samples whose requests hang from their second call on (a slow sample). */
const slow = new Set<string>();
let mock: MockOpenAI;
beforeAll(async () => {
  mock = await startMockOpenAI({
    respond: ({ key, n, format }) => {
      if (slow.has(key) && n > 1) return { hang: true };
      return {
        toolCalls: [{ id: `c${n}`, name: "ping", arguments: {} }],
        content: `step ${n}`,
        usage: FORMATS[format].usage,
      };
    },
  });
});
afterAll(() => mock.close());

const { project } = perTest();

function limitOf(row: Record<string, unknown>) {
  return JSON.parse(String(row.limit_hit)) as { limit: string; value: number; used: number };
}

// The OpenAI format, and the Anthropic Messages API's (tool_use and tool_result blocks).
describe.each([{ format: "openai" as const }, { format: "anthropic" as const }])(
  "a per-sample cost limit through the real CLI, $format format",
  ({ format }) => {
    it("a cost limit ends every sample of a looping agent as limited and scored; resume leaves them, --rerun-limited re-runs them", async () => {
      const { model, callUsd: CALL_USD } = FORMATS[format];
      const ids = Array.from({ length: N }, (_, i) => `cost${i}`);
      const p = project({ "eval.mjs": EVAL, "data.jsonl": data(ids) });
      const env = {
        MODEL: model,
        MOCK_URL: format === "openai" ? mock.url : mock.anthropicURL,
        LIMITS: JSON.stringify({ costUsd: 0.01 }),
        TOOL_LOG: `${p.dir}/tools.log`,
      };
      mock.reset();
      const run = await runCli(["run", "eval.mjs", "--json"], { cwd: p.dir, env });
      expect(run.code, run.stderr + run.stdout).toBe(0);
      const report = JSON.parse(run.stdout) as RunReport;
      expect(report.status).toBe("completed");
      expect(report.counts).toEqual({ total: N, scored: N, errored: 0, remaining: 0, limited: N });
      expect(report.limitedBy).toEqual({ costUsd: N });
      expect(report.metrics[0]).toMatchObject({ scorer: "soFar", mean: 1 });
      const first = rawAttempts(p.db);
      for (const a of first) {
        expect(a).toMatchObject({ attempt: 1, status: "scored", error: null });
        const limit = limitOf(a);
        expect(limit).toMatchObject({ limit: "costUsd", value: 0.01 });
        // What it used is what it was billed: at most one call past the limit.
        expect(limit.used).toBeCloseTo(Number(a.cost_usd), 12);
        expect(Number(a.cost_usd)).toBeLessThanOrEqual(0.01 + CALL_USD);
        // Scored on the output so far: the last assistant content.
        expect(JSON.parse(String(a.output))).toMatch(/^step \d+$/);
      }
      expect(mock.requests.every((r) => r.format === format)).toBe(true);
      const bought = mock.counts();
      expect(Object.keys(bought).sort()).toEqual(ids);
      const calls = Math.floor(0.01 / CALL_USD) + 1;
      for (const id of ids) expect(bought[id]).toBe(calls);

      // Shown apart from errors: the summary counts them by limit, a sample's attempt names it.
      const show = await runCli(["show", report.runId], { cwd: p.dir });
      expect(show.stdout).toMatch(/3 scored \(3 limited: costUsd 3\) · 0 errored/);
      const sample = await runCli(["show", report.runId, "--sample", "cost0"], { cwd: p.dir });
      const used = Number((calls * CALL_USD).toFixed(6));
      expect(sample.stdout).toContain(`limit costUsd (0.01; used ${used})`);

      // A limited key is finished: a resume executes nothing and buys nothing.
      mock.reset();
      const again = await runCli(["resume", report.runId, "--json"], { cwd: p.dir, env });
      expect(again.code, again.stderr + again.stdout).toBe(0);
      expect(mock.counts()).toEqual({});
      expect(rawAttempts(p.db)).toHaveLength(N);

      // --rerun-limited runs them again as new attempts, under the same limit.
      const rerun = await runCli(["resume", report.runId, "--rerun-limited", "--json"], {
        cwd: p.dir,
        env,
      });
      expect(rerun.code, rerun.stderr + rerun.stdout).toBe(0);
      expect(mock.counts()).toEqual(Object.fromEntries(ids.map((id) => [id, calls])));
      const latest = rawAttempts(p.db).filter((a) => a.attempt === 2);
      expect(latest.map((a) => [a.sample_id, a.status, limitOf(a).limit])).toEqual(
        ids.map((id) => [id, "scored", "costUsd"]),
      );
      // A changed limit is a changed eval: refused, nothing executed.
      const changed = await runCli(["resume", report.runId, "--rerun-limited"], {
        cwd: p.dir,
        env: { ...env, LIMITS: JSON.stringify({ costUsd: 0.02 }) },
      });
      expect(changed.code).not.toBe(0);
      expect(changed.stderr).toMatch(/limits/);
      expect(rawAttempts(p.db)).toHaveLength(2 * N);
    });
  },
);

describe.each([{ format: "openai" as const }, { format: "anthropic" as const }])(
  "a per-sample wall-time limit through the real CLI, $format format",
  ({ format }) => {
    it("a wall-time limit ends a slow sample as limited, not as an error; resume makes no request for it", async () => {
      slow.add("slow");
      const p = project({ "eval.mjs": EVAL, "data.jsonl": data(["slow"]) });
      const env = {
        MODEL: FORMATS[format].model,
        MOCK_URL: format === "openai" ? mock.url : mock.anthropicURL,
        LIMITS: JSON.stringify({ wallMs: 1_500 }),
        TOOL_LOG: `${p.dir}/tools.log`,
      };
      mock.reset();
      const run = await runCli(["run", "eval.mjs", "--json"], { cwd: p.dir, env });
      expect(run.code, run.stderr + run.stdout).toBe(0);
      const report = JSON.parse(run.stdout) as RunReport;
      expect(report.counts).toMatchObject({ scored: 1, errored: 0, limited: 1 });
      const [attempt] = rawAttempts(p.db);
      expect(attempt).toMatchObject({ status: "scored", error: null, output: '"step 1"' });
      const limit = limitOf(attempt!);
      expect(limit).toMatchObject({ limit: "wallMs", value: 1_500 });
      expect(limit.used).toBeGreaterThanOrEqual(1_500);
      expect(mock.counts()).toEqual({ slow: 2 });
      expect(mock.requests.every((r) => r.format === format)).toBe(true);

      mock.reset();
      const again = await runCli(["resume", report.runId], { cwd: p.dir, env });
      expect(again.code, again.stderr + again.stdout).toBe(0);
      expect(mock.counts()).toEqual({});
      expect(rawAttempts(p.db)).toHaveLength(1);
    });
  },
);
