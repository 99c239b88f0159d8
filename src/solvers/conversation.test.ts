import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import * as z from "zod";
import { isStetError } from "../core/errors.js";
import type { SolverFn, SolverResult } from "../core/eval.js";
import type { Sample } from "../core/types.js";
import { context, type Spent } from "../engine/solver-context.js";
import { StepJournal } from "../engine/step-journal.js";
import type { JournalEntry, StepDiscard, StepDraft } from "../store/types.js";
import { startMockOpenAI, type MockOpenAI } from "../../test/helpers/mock-openai.js";
import { agent } from "./agent.js";
import { chat } from "./chat.js";
import { conversation } from "./conversation.js";
import { callModel } from "./model-call.js";
import { simulatedUser, type SimulatedUserOptions } from "./simulated-user.js";

type Wire = { role: string; content?: unknown };
const key = { sampleId: "s1", epoch: 1 };

/** The shop answers "answer <n>" to its n-th user message; the customer says "question <n>". */
let mock: MockOpenAI;
let customerSays = (n: number) => `question ${n}`;
beforeAll(async () => {
  mock = await startMockOpenAI({
    respond: ({ body }) => {
      const messages = body.messages as Wire[];
      if (body.model === "customer") {
        return { reply: customerSays(messages.filter((m) => m.role === "assistant").length + 1) };
      }
      if (Array.isArray(body.tools) && messages.at(-1)?.role === "user") {
        const call = { id: "c1", type: "function", function: { name: "look", arguments: "{}" } };
        return { message: { content: null, tool_calls: [call] }, finishReason: "tool_calls" };
      }
      return { reply: `answer ${messages.filter((m) => m.role === "user").length}` };
    },
  });
});
afterEach(() => {
  customerSays = (n) => `question ${n}`;
  mock.reset();
});
afterAll(() => mock.close());

/** The shop's solvers.chat (made once the mock has its URL). */
const baseShop = (): SolverFn =>
  chat({ model: "shop", baseURL: mock.url, system: "You are the shop." });
const customer = (options: Partial<SimulatedUserOptions> = {}) =>
  simulatedUser({
    model: "customer",
    baseURL: mock.url,
    persona: "A customer.",
    maxTurns: 4,
    prices: { input: 1, output: 1 },
    ...options,
  });

/** One attempt through the engine's own context and step journal. */
async function attempt(
  solver: SolverFn,
  sample: Sample,
  { entries = [], model }: { entries?: JournalEntry[]; model?: string } = {},
) {
  const written: StepDraft[] = [];
  const journal = new StepJournal({
    key,
    entries,
    write: (draft: StepDraft | StepDiscard) => {
      if ("step" in draft) written.push(draft);
      return Promise.resolve();
    },
    redact: (value) => ({ value, found: [] }),
  });
  const spent: Spent = { usage: [], retries: 0 };
  const task = { callModel, runId: "r_1", key, ...(model === undefined ? {} : { model }) };
  const ctx = context(task, new AbortController().signal, spent, journal);
  const result = (await solver(sample, ctx)) as SolverResult;
  return { result, written, spent };
}

const models = () => mock.requests.map((r) => r.body.model);

describe("solvers.conversation with a simulated user", () => {
  it("alternates until maxTurns; the customer sees the persona and the conversation with roles swapped; both sides' usage", async () => {
    const solver = conversation({ assistant: baseShop(), user: customer() });
    const { result } = await attempt(solver, { id: "s1", input: "question 1" });
    expect(models()).toEqual(["shop", "customer", "shop", "customer", "shop", "customer", "shop"]);
    expect(mock.requests[3]!.body.messages).toEqual([
      { role: "system", content: "A customer." },
      { role: "assistant", content: "question 1" },
      { role: "user", content: "answer 1" },
      { role: "assistant", content: "question 2" },
      { role: "user", content: "answer 2" },
    ]);
    expect(result.output).toBe("answer 4");
    expect(result.transcript).toHaveLength(1 + 2 * 4);
    // Seven requests of 10 + 5 tokens; only the customer's are priced here.
    expect(result.usage).toMatchObject({ inputTokens: 70, outputTokens: 35 });
    expect(result.usage).not.toHaveProperty("costUsd");
  });

  it("stops after the user's message that says the stop phrase; that message ends the transcript", async () => {
    customerSays = (n) => (n === 3 ? "thanks, DONE" : `question ${n}`);
    const solver = conversation({ assistant: baseShop(), user: customer({ stop: "DONE" }) });
    const { result } = await attempt(solver, { id: "s1", input: "question 1" });
    expect(result.output).toBe("answer 2");
    expect((result.transcript as Wire[]).slice(-2)).toEqual([
      { role: "assistant", content: "answer 2" },
      { role: "user", content: "thanks, DONE" },
    ]);
    expect(models()).toEqual(["shop", "customer", "shop", "customer"]);
  });

  it("a predicate stop gets the message and the conversation; a persona function the sample", async () => {
    const seen: number[] = [];
    const user = customer({
      persona: (sample) => `Customer of ${sample.id}.`,
      stop: (_message, so) => (seen.push(so.length), so.length >= 4),
    });
    await attempt(conversation({ assistant: baseShop(), user }), { id: "s7", input: "hi" });
    expect(seen).toEqual([4]);
    const [persona] = mock.requests[1]!.body.messages as Wire[];
    expect(persona).toEqual({ role: "system", content: "Customer of s7." });
  });

  it("the run's --model is the assistant's, never the user's", async () => {
    const solver = conversation({ assistant: baseShop(), user: customer({ maxTurns: 2 }) });
    await attempt(solver, { id: "s1", input: "hi" }, { model: "other-shop" });
    expect(models()).toEqual(["other-shop", "customer", "other-shop"]);
  });

  it("a resumed conversation replays its journaled turns of both sides and asks from the first unfinished call", async () => {
    const solver = conversation({ assistant: baseShop(), user: customer() });
    const sample = { id: "s1", input: "question 1" };
    const first = await attempt(solver, sample);
    expect(first.written).toHaveLength(7);
    mock.reset();
    // Killed in turn 3: its customer call and everything after it were never journaled.
    const entries = first.written
      .slice(0, 3)
      .map(({ truncate: _t, ...draft }) => ({ ...draft, runId: "r_1", attempt: null }));
    const resumed = await attempt(solver, sample, { entries });
    expect(models()).toEqual(["customer", "shop", "customer", "shop"]);
    expect(resumed.result.output).toBe(first.result.output);
    expect(resumed.result.transcript).toEqual(first.result.transcript);
    expect(resumed.result.usage).toMatchObject({ inputTokens: 70, reused: { inputTokens: 30 } });
  });

  it("an agent as the assistant: its tool calls stay in the transcript, the user sees only text", async () => {
    const assistant = agent({
      model: "shop",
      baseURL: mock.url,
      tools: { look: { parameters: z.object({}), execute: () => "found" } },
    });
    const { result } = await attempt(conversation({ assistant, user: customer({ maxTurns: 2 }) }), {
      id: "s1",
      input: "hi",
    });
    expect((result.transcript as Wire[]).map((m) => m.role)).toEqual([
      "user",
      "assistant",
      "tool",
      "assistant",
      "user",
      "assistant",
      "tool",
      "assistant",
    ]);
    expect(mock.requests[2]!.body.messages).toEqual([
      { role: "system", content: "A customer." },
      { role: "assistant", content: "hi" },
      { role: "user", content: "answer 1" },
    ]);
  });

  it("a function assistant without a transcript: its output is the assistant's message", async () => {
    const assistant: SolverFn = (sample) => `echo ${JSON.stringify(sample.input).length}`;
    const { result } = await attempt(conversation({ assistant, user: customer({ maxTurns: 2 }) }), {
      id: "s1",
      input: "hi",
    });
    expect(result.transcript).toEqual([
      { role: "user", content: "hi" },
      { role: "assistant", content: "echo 4" },
      { role: "user", content: "question 2" },
      { role: "assistant", content: expect.stringMatching(/^echo \d+$/) },
    ]);
  });

  it("describes both sides (persona, maxTurns, stop) and refuses scripted turns as its input", () => {
    const solver = conversation({ assistant: baseShop(), user: customer({ stop: "DONE" }) });
    expect(solver.describe!()).toMatchObject({
      kind: "conversation",
      assistant: { kind: "chat", model: "shop", system: "You are the shop." },
      user: {
        kind: "simulated-user",
        model: "customer",
        persona: "A customer.",
        maxTurns: 4,
        stop: "DONE",
      },
    });
    const byPredicate = customer({ stop: () => false }).describe();
    expect(byPredicate.stop).toMatchObject({ kind: "function", sourceSha256: expect.any(String) });
    expect(solver.checkInput!({ turns: ["a"] })).toMatch(
      /^input\.turns: a conversation with a simulated user opens/,
    );
    expect(solver.checkInput!([{ role: "bot", content: "a" }])).toMatch(/^input\[0\]\.role/);
    expect(solver.checkInput!("hi")).toBeUndefined();
  });

  it.each<[string, Partial<SimulatedUserOptions>, RegExp]>([
    ["maxTurns 0", { maxTurns: 0 }, /maxTurns must be a whole number from 1 to 10000, got 0/],
    ["an empty persona", { persona: " " }, /persona must be a non-empty string/],
    ["an empty stop phrase", { stop: "" }, /stop must be a non-empty phrase or a function/],
  ])("simulatedUser refuses %s (E_CONFIG)", (_, options, message) => {
    let thrown: unknown;
    try {
      customer(options);
    } catch (error) {
      thrown = error;
    }
    expect(isStetError(thrown, "E_CONFIG")).toBe(true);
    expect((thrown as Error).message).toMatch(message);
  });
  it("refuses an assistant that is not a solver and a user that is not a simulatedUser (E_CONFIG)", () => {
    const refused = (make: () => unknown) => {
      try {
        make();
      } catch (error) {
        return isStetError(error, "E_CONFIG") ? error.message : "another error";
      }
      return "no error";
    };
    const user = customer();
    const bad = {} as unknown as SolverFn;
    expect(refused(() => conversation({ assistant: bad, user }))).toBe(
      "solvers.conversation: assistant must be a solver (a function)",
    );
    const notUser = {} as unknown as typeof user;
    expect(refused(() => conversation({ assistant: baseShop(), user: notUser }))).toBe(
      "solvers.conversation: user must be a simulatedUser({ ... })",
    );
  });
});

describe("scripted turns through solvers.agent", () => {
  it("runs the tool loop on each user turn in order, on the conversation so far", async () => {
    const solver = agent({
      model: "shop",
      baseURL: mock.url,
      tools: { look: { parameters: z.object({}), execute: () => "found" } },
    });
    const { result } = await attempt(solver, { id: "s1", input: { turns: ["a", "b"] } });
    expect(result.output).toBe("answer 2");
    expect((result.transcript as Wire[]).map((m) => m.role)).toEqual([
      "user",
      "assistant",
      "tool",
      "assistant",
      "user",
      "assistant",
      "tool",
      "assistant",
    ]);
    expect(mock.requests).toHaveLength(4);
  });
});

describe("scripted turns through solvers.chat", () => {
  it("a resumed sample replays the turns it answered and asks only the rest; usage of every turn, replayed ones reused", async () => {
    const sample = { id: "s1", input: { turns: ["a", "b", "c"] } };
    const first = await attempt(baseShop(), sample);
    expect(first.written).toHaveLength(3);
    expect(first.result.usage).toMatchObject({ inputTokens: 30, outputTokens: 15 });
    mock.reset();
    const entries = first.written
      .slice(0, 2)
      .map(({ truncate: _t, ...draft }) => ({ ...draft, runId: "r_1", attempt: null }));
    const resumed = await attempt(baseShop(), sample, { entries });
    expect(mock.requests.map((r) => (r.body.messages as Wire[]).length)).toEqual([6]);
    expect(resumed.result).toEqual({
      ...first.result,
      usage: { ...first.result.usage, reused: { inputTokens: 20, outputTokens: 10 } },
    });
  });
});
