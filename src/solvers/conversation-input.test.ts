import { describe, expect, it } from "vitest";
import type { Json } from "../core/json.js";
import { conversationOf, inputProblem, parseConversation } from "./conversation-input.js";
import { isSolverError } from "./solver-error.js";

describe("a sample's input as a conversation", () => {
  it.each<[string, Json, { messages: Json[]; turns: string[] }]>([
    ["a string", "hi", { messages: [{ role: "user", content: "hi" }], turns: [] }],
    [
      "a list of messages, every role",
      [
        { role: "system", content: "s" },
        { role: "user", content: "u" },
        { role: "assistant", content: null, tool_calls: [] },
        { role: "tool", content: "t", tool_call_id: "c1" },
        { role: "developer", content: "d" },
      ],
      {
        messages: [
          { role: "system", content: "s" },
          { role: "user", content: "u" },
          { role: "assistant", content: null, tool_calls: [] },
          { role: "tool", content: "t", tool_call_id: "c1" },
          { role: "developer", content: "d" },
        ],
        turns: [],
      },
    ],
    [
      "scripted turns",
      { turns: ["hi", "and then?", "bye"] },
      { messages: [{ role: "user", content: "hi" }], turns: ["and then?", "bye"] },
    ],
  ])("%s", (_, input, conversation) => {
    expect(parseConversation(input, { turns: true })).toEqual({ ok: true, conversation });
  });

  it.each<[string, Json, string]>([
    [
      "an unknown role",
      [{ role: "bot", content: "x" }],
      'input[0].role: "bot" is not a message role (system, user, assistant, tool or developer)',
    ],
    ["no role", ["hi"], 'input[0]: a message is an object { role, content }, got "hi"'],
    [
      "a missing role",
      [{ role: "user", content: "a" }, { content: "b" }],
      "input[1].role: missing (a message is { role, content })",
    ],
    [
      "a missing content",
      [{ role: "user" }],
      "input[0].content: missing (a message is { role, content })",
    ],
    ["an empty list", [], "input: an empty list of messages (it needs at least one)"],
    [
      "a turn that is not a string",
      { turns: ["a", 42] },
      "input.turns[1]: a turn is a string (the user's message), got 42",
    ],
    [
      "no turns",
      { turns: [] },
      "input.turns: expected a non-empty list of user messages (strings), got a list",
    ],
    [
      "turns that are not a list",
      { turns: "hi" },
      'input.turns: expected a non-empty list of user messages (strings), got "hi"',
    ],
    [
      "a field beside turns",
      { turns: ["a"], system: "s" },
      "input.system: unknown field (scripted turns are { turns: [...] })",
    ],
    [
      "another object",
      { q: 1 },
      "input: expected a string, a list of messages { role, content } or { turns: [...] }, got an object",
    ],
    [
      "a number",
      7,
      "input: expected a string, a list of messages { role, content } or { turns: [...] }, got 7",
    ],
  ])("refuses %s, naming the field", (_, input, problem) => {
    expect(inputProblem(input, { turns: true })).toBe(problem);
  });

  it("refuses turns where a solver takes none", () => {
    expect(inputProblem({ turns: ["a"] }, { turns: false })).toBe(
      "input: expected a string or a list of messages { role, content }, got an object",
    );
  });

  it("prepends the solver's system prompt unless the messages have one; a bad input is a solver error naming the sample", () => {
    const sample = { id: "s1", input: "hi" };
    expect(conversationOf(sample, "Be brief.", { turns: true }).messages).toEqual([
      { role: "system", content: "Be brief." },
      { role: "user", content: "hi" },
    ]);
    const own = [
      { role: "system", content: "Mine." },
      { role: "user", content: "hi" },
    ];
    expect(conversationOf({ id: "s1", input: own }, "Be brief.", { turns: true }).messages).toEqual(
      own,
    );
    let thrown: unknown;
    try {
      conversationOf({ id: "s9", input: [{ role: "bot", content: "x" }] }, undefined, {
        turns: true,
      });
    } catch (error) {
      thrown = error;
    }
    expect(isSolverError(thrown)).toBe(true);
    expect((thrown as Error).message).toMatch(/^sample "s9": input\[0\]\.role: "bot"/);
  });
});
