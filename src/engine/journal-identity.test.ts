import { createHash } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ModelCaller } from "../core/eval.js";
import type { JournalEntry } from "../store/types.js";
import { chat } from "../solvers/chat.js";
import { context } from "./solver-context.js";
import { StepJournal } from "./step-journal.js";
import { startMockOpenAI, type MockOpenAI } from "../../test/helpers/mock-openai.js";

/**
 * Journals written before the provider seam hashed a chat step's input by these exact canonical
 * JSON texts (ctx.chat: the model as named, `system` apart; solvers.chat: the bare model, the
 * system prompt among the messages). A resume with today's code must still replay them.
 */
const CTX_CHAT_INPUT =
  '{"maxTokens":8,"messages":[{"content":"2+2?","role":"user"}],"model":"openai:gpt-4o-mini","system":"Be brief.","temperature":0}';
const SOLVER_INPUT =
  '{"messages":[{"content":"Be brief.","role":"system"},{"content":"task 0","role":"user"}],"model":"gpt-4o-mini","params":{"seed":7},"temperature":0}';

function oldEntry(inputText: string): JournalEntry {
  return {
    runId: "r",
    attempt: null,
    sampleId: "s0",
    epoch: 1,
    step: 0,
    name: "chat",
    kind: "chat",
    inputHash: createHash("sha256").update(inputText).digest("hex"),
    input: JSON.parse(inputText) as JournalEntry["input"],
    result: { content: "journaled 4", model: "gpt-4o-mini" },
    error: null,
    usage: { inputTokens: 10, outputTokens: 2 },
    recordedAt: "2026-11-01T00:00:00.000Z",
    durationMs: 5,
  };
}

function journalOf(entry: JournalEntry): { journal: StepJournal; writes: unknown[] } {
  const writes: unknown[] = [];
  const journal = new StepJournal({
    key: { sampleId: "s0", epoch: 1 },
    entries: [entry],
    write: async (draft) => {
      writes.push(draft);
    },
    redact: (value) => ({ value, found: [] }),
  });
  return { journal, writes };
}

let mock: MockOpenAI;
beforeAll(async () => {
  mock = await startMockOpenAI({ reply: () => "fresh" });
});
afterAll(() => mock.close());

describe("a chat step's whole reply", () => {
  const toolReply = {
    content: "",
    model: "gpt-4o-mini",
    toolCalls: [{ id: "c1", name: "add", arguments: { a: 2, b: 2 } }],
    finishReason: "tool_calls" as const,
    reasoning: "add them",
    message: {
      role: "assistant",
      content: "",
      toolCalls: [{ id: "c1", name: "add", arguments: { a: 2, b: 2 } }],
      reasoning: "add them",
    },
    usage: { inputTokens: 10, outputTokens: 2 },
  };
  const call = {
    model: "gpt-4o-mini",
    messages: [{ role: "user", content: "2+2?" }],
    tools: [{ name: "add", parameters: { type: "object" } }],
  };

  it("is recorded, and replayed with its tool calls; the usage stays in its own field", async () => {
    const writes: { result: unknown; usage: unknown; input: unknown }[] = [];
    const recording = new StepJournal({
      key: { sampleId: "s0", epoch: 1 },
      entries: [],
      write: async (draft) => {
        writes.push(draft as (typeof writes)[number]);
      },
      redact: (value) => ({ value, found: [] }),
    });
    const callModel: ModelCaller = async () => toolReply;
    const task = { callModel, model: undefined, runId: "r", key: { sampleId: "s0", epoch: 1 } };
    const sent = await context(
      task,
      new AbortController().signal,
      { usage: [], retries: 0 },
      recording,
    ).chat(call);
    expect(sent).toEqual(toolReply);
    // The message is what the rest of the reply makes: it is not journaled twice.
    const { usage, message: _message, ...recorded } = toolReply;
    expect(writes[0]).toMatchObject({ result: recorded, usage });
    expect(writes[0]!.result).not.toHaveProperty("message");
    expect(writes[0]!.input).toMatchObject({ tools: call.tools });
    expect(writes[0]!.input).not.toHaveProperty("provider");

    const entry = { ...oldEntry("{}"), ...(writes[0] as object) } as JournalEntry;
    const { journal } = journalOf(entry);
    const never: ModelCaller = async () => {
      throw new Error("a replayed call is not sent");
    };
    const replayed = await context(
      { ...task, callModel: never },
      new AbortController().signal,
      { usage: [], retries: 0 },
      journal,
    ).chat(call);
    expect(replayed).toEqual(toolReply);
    expect(journal.replayed).toBe(1);
  });

  it("of an anthropic call is keyed apart from the same call to openai", async () => {
    const inputs: unknown[] = [];
    for (const model of ["anthropic:claude-sonnet-4-5", "claude-sonnet-4-5"]) {
      const journal = new StepJournal({
        key: { sampleId: "s0", epoch: 1 },
        entries: [],
        write: async (draft) => {
          inputs.push((draft as { input: unknown }).input);
        },
        redact: (value) => ({ value, found: [] }),
      });
      const callModel: ModelCaller = async () => toolReply;
      await context(
        { callModel, model, runId: "r", key: { sampleId: "s0", epoch: 1 } },
        new AbortController().signal,
        { usage: [], retries: 0 },
        journal,
      ).chat(call);
    }
    expect(inputs[0]).toMatchObject({ provider: "anthropic" });
    expect(inputs[1]).not.toHaveProperty("provider");
  });
});

describe("chat steps journaled before the provider seam still replay", () => {
  it.each([
    ["the same call", "2+2?", 0],
    ["another call (the check can fail)", "3+3?", 1],
  ])(
    "ctx.chat: %s is answered from the journal or sent, as it should",
    async (_what, question, sent) => {
      const { journal } = journalOf(oldEntry(CTX_CHAT_INPUT));
      let calls = 0;
      const callModel: ModelCaller = async () => {
        calls++;
        return { content: "fresh", model: "gpt-4o-mini" };
      };
      const spent = { usage: [], retries: 0 };
      const ctx = context(
        { callModel, model: undefined, runId: "r", key: { sampleId: "s0", epoch: 1 } },
        new AbortController().signal,
        spent,
        journal,
      );
      const reply = await ctx.chat({
        model: "openai:gpt-4o-mini",
        messages: [{ role: "user", content: question }],
        system: "Be brief.",
        temperature: 0,
        maxTokens: 8,
        baseURL: mock.url,
      });
      expect(calls).toBe(sent);
      expect(journal.replayed).toBe(1 - sent);
      expect(reply.content).toBe(sent === 0 ? "journaled 4" : "fresh");
      // A content-only entry replays as a whole reply: no tool calls, finish reason unknown.
      expect(reply).toMatchObject({
        toolCalls: [],
        finishReason: sent === 0 ? "other" : expect.any(String),
        message: { role: "assistant", content: reply.content },
      });
    },
  );

  it.each([
    ["the same sample", "task 0", 0],
    ["another sample (the check can fail)", "task 1", 1],
  ])(
    "solvers.chat: %s is answered from the journal or sent, as it should",
    async (_what, input, sent) => {
      mock.reset();
      const { journal } = journalOf(oldEntry(SOLVER_INPUT));
      const solver = chat({
        model: "openai:gpt-4o-mini",
        system: "Be brief.",
        temperature: 0,
        params: { seed: 7 },
        baseURL: mock.url,
      });
      const ctx = context(
        { model: undefined, runId: "r", key: { sampleId: "s0", epoch: 1 } },
        new AbortController().signal,
        { usage: [], retries: 0 },
        journal,
      );
      const result = await solver({ id: "s0", input }, ctx);
      expect(mock.requests.length).toBe(sent);
      expect(result).toMatchObject({ output: sent === 0 ? "journaled 4" : "fresh" });
    },
  );
});
