import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type { SolverFn } from "../core/eval.js";
import { runEval } from "../runs/start-run.js";
import { defineEval } from "../eval/define-eval.js";
import { resolveEval } from "../eval/resolve-eval.js";
import type { DatasetRow } from "../eval/types.js";
import { scorers } from "../scorers/index.js";
import { startMockOpenAI, type MockOpenAI } from "../../test/helpers/mock-openai.js";
import { tempStore } from "../../test/helpers/temp-store.js";

let mock: MockOpenAI;
beforeAll(async () => {
  mock = await startMockOpenAI({
    reply: ({ key }) => (key.includes("GRADE") ? "Fine.\nGRADE: C" : `echo ${key}`),
    usage: { prompt_tokens: 1000, completion_tokens: 100 },
    respond: ({ key }) => (key === "hang" ? { hang: true } : undefined),
  });
});
afterEach(() => mock.reset());
afterAll(() => mock.close());

const stores: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  while (stores.length) await stores.pop()!();
});

/** Runs one sample through `solver` (and an optional scorer) with the engine, as the CLI would. */
async function runOne(
  solver: SolverFn,
  options: {
    input?: string;
    model?: string;
    timeoutMs?: number;
    scorer?: boolean;
    judge?: boolean;
  } = {},
) {
  const t = tempStore();
  stores.push(t.cleanup);
  const ev = await resolveEval(
    defineEval({
      name: "agent",
      dataset: [{ id: "s1", input: options.input ?? "question" }] as DatasetRow[],
      solver,
      scorers: [
        options.judge
          ? scorers.modelGraded({ model: "gpt-4o-mini", baseURL: mock.url, apiKey: "sk-judge" })
          : options.scorer
            ? scorers.custom("judge", async ({ ctx }) => {
                const verdict = await ctx.chat({
                  model: "gpt-4o-mini",
                  baseURL: mock.url,
                  apiKey: "sk-judge",
                  messages: [{ role: "user", content: "judge" }],
                });
                return verdict.content === "echo judge";
              })
            : scorers.custom("ok", () => true),
      ],
      ...(options.timeoutMs === undefined ? {} : { timeoutMs: options.timeoutMs }),
    }),
    { baseDir: process.cwd() },
  );
  const report = await runEval({
    store: t.store,
    eval: ev,
    ...(options.model === undefined ? {} : { model: options.model }),
  });
  const [attempt] = await t.store.reads.listAttempts(report.runId);
  return attempt!;
}

const twoCalls: SolverFn = async (sample, ctx) => {
  const call = { baseURL: mock.url, apiKey: "sk-agent", model: "openai:gpt-4o-mini" };
  const plan = await ctx.chat({ ...call, messages: [{ role: "user", content: "plan" }] });
  const answer = await ctx.chat({
    ...call,
    system: "Be brief.",
    messages: [{ role: "user", content: String(sample.input) }],
  });
  return `${plan.content} / ${answer.content}`;
};

describe("ctx.chat", () => {
  it("records every call's tokens and cost in the attempt's usage", async () => {
    const attempt = await runOne(twoCalls);
    expect(attempt.status).toBe("scored");
    expect(attempt.output).toBe("echo plan / echo question");
    // gpt-4o-mini: $0.15 in / $0.60 out per 1M tokens; 2 × (1,000 in + 100 out).
    expect(attempt.usage).toEqual({
      inputTokens: 2000,
      outputTokens: 200,
      costUsd: expect.closeTo(2 * (1000 * 0.15 + 100 * 0.6) * 1e-6, 12),
    });
    const sent = mock.requests.map((r) => r.body as { model: string; messages: unknown[] });
    expect(sent.map((b) => b.model)).toEqual(["gpt-4o-mini", "gpt-4o-mini"]);
    expect(sent[1]!.messages[0]).toEqual({ role: "system", content: "Be brief." });
  });

  it("adds a scorer's model calls, and usage the solver returns, to the same attempt", async () => {
    const attempt = await runOne(
      async (sample, ctx) => {
        await twoCalls(sample, ctx);
        return { output: "done", usage: { inputTokens: 5, outputTokens: 7 } };
      },
      { scorer: true },
    );
    expect(attempt.scores).toEqual([expect.objectContaining({ value: 1 })]);
    expect(attempt.usage).toMatchObject({ inputTokens: 3005, outputTokens: 307 });
  });

  it("adds a modelGraded judge's spend to the attempt, and shows it apart in the score", async () => {
    const attempt = await runOne(() => "4", { judge: true });
    const judgeUsage = {
      inputTokens: 1000,
      outputTokens: 100,
      costUsd: expect.closeTo((1000 * 0.15 + 100 * 0.6) * 1e-6, 12),
    };
    expect(attempt.scores).toEqual([
      expect.objectContaining({ value: 1, metadata: expect.objectContaining({ judgeUsage }) }),
    ]);
    expect(attempt.usage).toEqual(judgeUsage);
  });

  it("keeps the spend of an attempt whose solver fails after calling the model", async () => {
    const attempt = await runOne(async (sample, ctx) => {
      await twoCalls(sample, ctx);
      throw new Error("the agent gave up");
    });
    expect(attempt.status).toBe("error");
    expect(attempt.error).toMatchObject({ type: "solver", message: "the agent gave up" });
    expect(attempt.usage).toMatchObject({ inputTokens: 2000, outputTokens: 200 });
  });

  it("uses the run's --model over the call's, and needs one of them", async () => {
    const plain: SolverFn = async (_sample, ctx) =>
      (await ctx.chat({ baseURL: mock.url, messages: [{ role: "user", content: "hi" }] })).model;
    expect((await runOne(plain, { model: "openai:gpt-4.1" })).output).toBe("gpt-4.1");
    const missing = await runOne(plain);
    expect(missing.status).toBe("error");
    expect(missing.error?.message).toMatch(/ctx\.chat needs a model/);
  });

  it("is cut by the attempt's timeout", async () => {
    const attempt = await runOne(
      async (_sample, ctx) =>
        (
          await ctx.chat({
            model: "m",
            baseURL: mock.url,
            messages: [{ role: "user", content: "hang" }],
          })
        ).content,
      { timeoutMs: 200 },
    );
    expect(attempt.status).toBe("error");
    expect(attempt.error?.type).toBe("timeout");
  });
});
