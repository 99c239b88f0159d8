import { describe, expect, it } from "vitest";
import type { ModelCall, ModelCaller, Scorer, SolverFn } from "../core/eval.js";
import { isLimitReached, type SampleLimits } from "../core/limits.js";
import type { StepDiscard, StepDraft } from "../store/types.js";
import { conversation } from "../solvers/conversation.js";
import { simulatedUser } from "../solvers/simulated-user.js";
import { startMockOpenAI } from "../../test/helpers/mock-openai.js";
import { executeKey, type KeyTask } from "./execute-key.js";

const record = { sample: { id: "q1", input: "go", target: "4" }, fingerprint: "fp:q1" };
const said: Scorer = { name: "said", score: ({ output }) => (output === "" ? 0 : 1) };

/**
 * A model caller that counts the calls it was asked to make; each uses 100 input and 20 output
 * tokens at $0.001. Its worst case is the call's maxTokens output at the same rate per token
 * ($0.00002 per output token) and 100 input tokens.
 */
function counting(): { caller: ModelCaller; calls: ModelCall[] } {
  const calls: ModelCall[] = [];
  const caller: ModelCaller = async (call) => {
    calls.push(call);
    return {
      content: `reply ${calls.length}`,
      model: "m",
      usage: { inputTokens: 100, outputTokens: 20, costUsd: 0.001 },
    };
  };
  caller.worstCase = (call) => ({
    inputTokens: 100,
    outputTokens: call.maxTokens ?? 0,
    costUsd: (call.maxTokens ?? 0) * 0.00002,
  });
  return { caller, calls };
}

/** A loop that calls the model until told to stop, keeping its last reply; `catches` or not. */
function looping(catches: boolean, maxTokens?: number): SolverFn {
  return async (_sample, ctx) => {
    let last = "";
    try {
      for (;;) {
        const reply = await ctx.chat({
          model: "m",
          messages: [{ role: "user", content: "go" }],
          ...(maxTokens === undefined ? {} : { maxTokens }),
        });
        last = reply.content;
        await ctx.step("tool", { after: last }, () => "ok");
      }
    } catch (error) {
      if (catches && isLimitReached(error)) return last;
      throw error;
    }
  };
}

function task(solver: SolverFn, limits: SampleLimits, caller: ModelCaller): KeyTask {
  const write = async (_draft: StepDraft | StepDiscard) => {};
  return {
    key: { sampleId: "q1", epoch: 1 },
    record,
    solver,
    scorers: [said],
    runId: "r_1",
    abort: new AbortController().signal,
    callModel: caller,
    limits,
    journal: { entries: [], write },
  };
}

describe("per-sample limits in an attempt", () => {
  it("turns: the call past the limit is not made; the attempt is scored on what the solver returned", async () => {
    const { caller, calls } = counting();
    const draft = await executeKey(task(looping(true), { turns: 3 }, caller));
    expect(calls).toHaveLength(3);
    expect(draft).toMatchObject({
      status: "scored",
      output: "reply 3",
      scores: [{ scorer: "said", value: 1 }],
      error: null,
      limit: { limit: "turns", value: 3, used: 3 },
      // What it bought: the three calls made, never the one refused.
      usage: { inputTokens: 300, outputTokens: 60, costUsd: 0.003 },
    });
  });

  it("cost: a call whose worst case would cross the limit is not made", async () => {
    const { caller, calls } = counting();
    // Each call costs $0.001 and may cost $0.002 more (100 max tokens): after 2 calls ($0.002)
    // the third's worst case ($0.004 in all) would pass $0.0035, so it is not made.
    const draft = await executeKey(task(looping(true, 100), { costUsd: 0.0035 }, caller));
    expect(calls).toHaveLength(2);
    expect(draft.limit).toEqual({ limit: "costUsd", value: 0.0035, used: 0.002 });
    expect(draft.usage?.costUsd).toBeCloseTo(0.002, 12);
    expect(draft.output).toBe("reply 2");
  });

  it("tokens and output tokens: counted over the calls made, with the next call's worst case", async () => {
    const tokens = counting();
    // 120 tokens a call, and the next may use 100 + 50: after 2 calls (240), a third (390) passes 300.
    const byTokens = await executeKey(task(looping(true, 50), { tokens: 300 }, tokens.caller));
    expect(tokens.calls).toHaveLength(2);
    expect(byTokens.limit).toEqual({ limit: "tokens", value: 300, used: 240 });
    const output = counting();
    // Without maxTokens the worst case of the output is unknown: the call that reaches it is made.
    const byOutput = await executeKey(task(looping(true), { outputTokens: 50 }, output.caller));
    expect(output.calls).toHaveLength(3);
    expect(byOutput.limit).toEqual({ limit: "outputTokens", value: 50, used: 60 });
  });

  it("a solver that does not catch the limit is scored on an empty output, not an error", async () => {
    const { caller } = counting();
    const draft = await executeKey(task(looping(false), { turns: 2 }, caller));
    expect(draft).toMatchObject({
      status: "scored",
      output: "",
      scores: [{ scorer: "said", value: 0 }],
      error: null,
      limit: { limit: "turns", value: 2, used: 2 },
    });
  });

  it("wall time: the solver is aborted with the limit and scored on what it returns", async () => {
    const { caller } = counting();
    const solver: SolverFn = async (_sample, ctx) => {
      await new Promise((resolve) => ctx.signal.addEventListener("abort", resolve));
      return isLimitReached(ctx.signal.reason) ? "partial" : "aborted otherwise";
    };
    const draft = await executeKey(task(solver, { wallMs: 50 }, caller));
    expect(draft).toMatchObject({ status: "scored", output: "partial", error: null });
    expect(draft.limit).toMatchObject({ limit: "wallMs", value: 50 });
    expect(draft.limit!.used).toBeGreaterThanOrEqual(50);
  });

  it("an attempt no limit ended has no limit", async () => {
    const { caller } = counting();
    const solver: SolverFn = async (_sample, ctx) =>
      (await ctx.chat({ model: "m", messages: [{ role: "user", content: "go" }] })).content;
    const draft = await executeKey(task(solver, { turns: 5, wallMs: 60_000 }, caller));
    expect(draft.status).toBe("scored");
    expect(draft).not.toHaveProperty("limit");
  });

  it("a conversation with a simulated user ends at the limit with the assistant's last answer", async () => {
    const { caller, calls } = counting();
    const mock = await startMockOpenAI({ reply: () => "tell me more" });
    try {
      const assistant: SolverFn = async (_sample, ctx) =>
        (await ctx.chat({ model: "m", messages: [{ role: "user", content: "go" }] })).content;
      const user = simulatedUser({
        model: "gpt-4o-mini",
        baseURL: mock.url,
        apiKey: "test",
        persona: "a customer",
        maxTurns: 10,
      });
      // Assistant, user, assistant: the user's second message (the fourth call) is not asked for.
      const draft = await executeKey(task(conversation({ assistant, user }), { turns: 3 }, caller));
      expect([calls.length, mock.requests.length]).toEqual([2, 1]);
      expect(draft).toMatchObject({
        status: "scored",
        output: "reply 2",
        error: null,
        limit: { limit: "turns", value: 3, used: 3 },
      });
    } finally {
      await mock.close();
    }
  });
});
