import { describe, expect, it } from "vitest";
import type { Json } from "../core/json.js";
import type { Scorer, ScorerArgs, SolverContext } from "../core/eval.js";
import { trajectoryOf, type Trajectory, type TrajectoryEntry } from "../core/trajectory.js";
import { sequenceMatches, toolCallF1, toolSequence, toolUsed, turns } from "./trajectory.js";

/** A reply of a `ctx.chat` entry as the journal holds it, asking for the given tool calls. */
function chat(step: number, calls: [string, Json][], content = ""): TrajectoryEntry {
  return {
    step,
    name: "chat",
    kind: "chat",
    input: { model: "gpt-4o-mini", messages: [] },
    result: {
      content,
      model: "gpt-4o-mini-2024",
      finishReason: calls.length > 0 ? "tool_calls" : "stop",
      toolCalls: calls.map(([name, args], i) => ({ id: `c${step}-${i}`, name, arguments: args })),
    },
    error: null,
    usage: { inputTokens: 10, outputTokens: 5 },
  };
}

function step(n: number, name: string, input: Json, result: Json = null): TrajectoryEntry {
  return { step: n, name, kind: "step", input, result, error: null, usage: null };
}

/** A trajectory whose replies call these tools, one reply per call, then answer. */
function calling(...calls: [string, Json][]): Trajectory {
  const entries = calls.map((c, i) => chat(i, [c]));
  return trajectoryOf([...entries, chat(calls.length, [], "done")]);
}

const ctx = {} as SolverContext;
async function score(scorer: Scorer, trajectory: Trajectory | undefined) {
  const args: ScorerArgs = { sample: { id: "s", input: "x" }, output: "done", ctx };
  return scorer.score(trajectory ? { ...args, trajectory } : args);
}

describe("trajectoryOf", () => {
  it("orders events by step and takes the replies' tool calls, arguments as parsed", () => {
    const t = trajectoryOf([
      step(1, "tool:add", { a: 1 }, 2),
      chat(0, [["add", { a: 1 }]]),
      chat(2, [], "2"),
    ]);
    if (!t.known) throw new Error("unknown");
    expect(t.events.map((e) => [e.type, e.step])).toEqual([
      ["model", 0],
      ["step", 1],
      ["model", 2],
    ]);
    expect(t.calls[0]).toMatchObject({ model: "gpt-4o-mini-2024", finishReason: "tool_calls" });
    expect(t.calls[1]).toMatchObject({ content: "2", toolCalls: [] });
    expect(t.steps).toEqual([
      { type: "step", step: 1, name: "tool:add", input: { a: 1 }, result: 2, error: null },
    ]);
    // The replies asked for tools: the tool: steps are their execution, not more calls.
    expect(t.toolCalls).toEqual([{ name: "add", arguments: { a: 1 } }]);
  });

  it("without a reply that asked for a tool, the tool:<name> steps are the tool calls", () => {
    const t = trajectoryOf([
      step(0, "tool:search", { q: "x" }),
      step(1, "parse", "text"),
      { ...step(2, "tool:read", { path: "a" }), result: null, error: { message: "no such file" } },
    ]);
    if (!t.known) throw new Error("unknown");
    expect(t.toolCalls).toEqual([
      { name: "search", arguments: { q: "x" } },
      { name: "read", arguments: { path: "a" } },
    ]);
    expect(t.steps[2]).toMatchObject({ error: "no such file", result: null });
  });

  it("reads an AI SDK doGenerate result's text and tool calls (input as JSON text)", () => {
    const t = trajectoryOf([
      {
        step: 0,
        name: "ai-sdk.generate",
        kind: "chat",
        input: { provider: "openai.chat", model: "gpt-4o-mini", options: {} },
        result: {
          content: [
            { type: "text", text: "let me look" },
            { type: "tool-call", toolCallId: "t1", toolName: "weather", input: '{"city":"Oslo"}' },
          ],
          finishReason: "tool-calls",
        },
        error: null,
        usage: null,
      },
    ]);
    if (!t.known) throw new Error("unknown");
    expect(t.calls[0]).toMatchObject({
      model: "gpt-4o-mini",
      content: "let me look",
      toolCalls: [{ id: "t1", name: "weather", arguments: { city: "Oslo" } }],
    });
  });

  it("reads an AI SDK doStream's recorded parts (a V3 finish reason is { unified, raw })", () => {
    const t = trajectoryOf([
      {
        step: 0,
        name: "ai-sdk.stream",
        kind: "chat",
        input: { provider: "openai.chat", model: "gpt-4o-mini", options: {} },
        result: {
          parts: [
            { type: "text-delta", id: "1", delta: "let " },
            { type: "text-delta", id: "1", delta: "me look" },
            { type: "tool-call", toolCallId: "t1", toolName: "weather", input: "{}" },
            { type: "finish", finishReason: { unified: "tool-calls", raw: "tool_calls" } },
          ],
        },
        error: null,
        usage: null,
      },
    ]);
    if (!t.known) throw new Error("unknown");
    expect(t.calls[0]).toMatchObject({
      content: "let me look",
      finishReason: "tool-calls",
      toolCalls: [{ id: "t1", name: "weather", arguments: {} }],
    });
  });
});

describe("toolSequence", () => {
  // Calls made: search, ls, read, search.
  const made = ["search", "ls", "read", "search"];
  it.each([
    ["exact", ["search", "ls", "read", "search"], true],
    ["exact", ["search", "ls", "read"], false],
    ["exact", ["ls", "search", "read", "search"], false],
    ["in-order", ["search", "read"], true],
    ["in-order", ["search", "read", "search"], true],
    ["in-order", ["read", "ls"], false],
    ["in-order", ["search", "search", "search"], false],
    ["in-order", [], true],
    ["any-order", ["read", "search", "ls"], true],
    ["any-order", ["search", "search"], true],
    ["any-order", ["search", "search", "search"], false],
    ["any-order", ["write"], false],
  ] as const)("%s %j over search, ls, read, search: %s", async (mode, expected, matches) => {
    expect(sequenceMatches(made, expected, mode)).toBe(matches);
    const trajectory = calling(...made.map((n): [string, Json] => [n, {}]));
    expect(await score(toolSequence(expected, { mode }), trajectory)).toEqual({
      value: matches ? 1 : 0,
      metadata: { calls: made },
    });
  });

  it("defaults to exact", async () => {
    const trajectory = calling(["a", {}], ["b", {}]);
    expect(await score(toolSequence(["a", "b"]), trajectory)).toMatchObject({ value: 1 });
    expect(await score(toolSequence(["a"]), trajectory)).toMatchObject({ value: 0 });
  });
});

describe("toolCallF1", () => {
  // Calls made: add(1,2), add(3,4), multiply(3,7), answer("21").
  const trajectory = calling(
    ["add", { a: 1, b: 2 }],
    ["add", { b: 4, a: 3 }],
    ["multiply", { a: 3, b: 7 }],
    ["answer", { text: "21" }],
  );
  it.each([
    // All four expected, arguments in another key order: 4 matched of 4 and 4.
    [
      "every call",
      [
        { name: "add", arguments: { a: 1, b: 2 } },
        { name: "add", arguments: { a: 3, b: 4 } },
        { name: "multiply", arguments: { a: 3, b: 7 } },
        { name: "answer", arguments: { text: "21" } },
      ],
      { value: 1, matched: 4, precision: 1, recall: 1 },
    ],
    // Two expected by name only: 2 matched; P = 2/4, R = 2/2, F1 = 4/6.
    [
      "names only",
      [{ name: "add" }, { name: "answer" }],
      { value: 2 / 3, matched: 2, precision: 0.5, recall: 1 },
    ],
    // add(3,4) with wrong arguments, and a search never made: 2 of 4 expected match
    // (add(1,2), multiply); F1 = 2·2 / (4 + 4) = 0.5.
    [
      "wrong arguments and a missing call",
      [
        { name: "add", arguments: { a: 1, b: 2 } },
        { name: "add", arguments: { a: 9, b: 9 } },
        { name: "multiply" },
        { name: "search" },
      ],
      { value: 0.5, matched: 2, precision: 0.5, recall: 0.5 },
    ],
    // The multiset: three adds expected, two made: 2 matched; F1 = 4 / (4 + 3) = 4/7.
    [
      "more than were made",
      [{ name: "add" }, { name: "add" }, { name: "add" }],
      { value: 4 / 7, matched: 2, precision: 0.5, recall: 2 / 3 },
    ],
    // A name-only add listed first must not take add(1,2) from the one that needs it:
    // 2 matched; F1 = 4 / (4 + 2) = 2/3.
    [
      "narrow expectations pair first",
      [{ name: "add" }, { name: "add", arguments: { a: 1, b: 2 } }],
      { value: 2 / 3, matched: 2, precision: 0.5, recall: 1 },
    ],
    ["nothing expected", [], { value: 0, matched: 0, precision: 0, recall: 1 }],
  ] as const)("%s", async (_what, expected, want) => {
    const got = await score(toolCallF1(expected), trajectory);
    const { value, matched, precision, recall } = want;
    expect(got).toMatchObject({ metadata: { matched, precision, recall } });
    expect((got as { value: number }).value).toBeCloseTo(value, 12);
  });

  it("is 1 when nothing was expected and nothing was called", async () => {
    expect(await score(toolCallF1([]), calling())).toMatchObject({ value: 1 });
  });
});

describe("toolUsed and turns", () => {
  it("toolUsed counts the calls of its tool", async () => {
    const trajectory = calling(["search", {}], ["search", {}], ["read", {}]);
    expect(await score(toolUsed("search"), trajectory)).toEqual({
      value: 1,
      metadata: { calls: 2 },
    });
    expect(await score(toolUsed("write"), trajectory)).toEqual({
      value: 0,
      metadata: { calls: 0 },
    });
  });

  it("turns is 1 up to max model calls", async () => {
    const trajectory = calling(["a", {}], ["b", {}]); // 3 model calls
    expect(await score(turns({ max: 3 }), trajectory)).toEqual({
      value: 1,
      metadata: { turns: 3, max: 3 },
    });
    expect(await score(turns({ max: 2 }), trajectory)).toMatchObject({ value: 0 });
    expect(() => turns({ max: -1 })).toThrow(/max must be a non-negative integer/);
  });

  it.each([
    [() => toolUsed(""), /scorers.toolUsed\(name\) needs a tool name/],
    [
      () => toolSequence(["a", 3 as unknown as string]),
      /toolSequence\(expected\): item 1 has no tool name/,
    ],
    [
      () => toolSequence(["a"], { mode: "sorted" as "exact" }),
      /mode must be one of "exact", "in-order", "any-order" \(got "sorted"\)/,
    ],
    [
      () => toolCallF1([{ name: "a" }, {} as { name: string }]),
      /toolCallF1\(expected\): item 1 has no tool name/,
    ],
    [() => toolCallF1("add" as unknown as []), /toolCallF1\(expected\) needs a list/],
  ])("refuses a misconfiguration with E_CONFIG naming it (%#)", (make, message) => {
    expect(make).toThrow(message);
    expect(make).toThrow(expect.objectContaining({ code: "E_CONFIG" }));
  });

  it("an unknown trajectory is skipped with its reason, never scored as empty", async () => {
    const unknown: Trajectory = { known: false, reason: "the journal was pruned" };
    for (const scorer of [toolUsed("a"), toolSequence([]), toolCallF1([]), turns({ max: 1 })]) {
      expect(await score(scorer, unknown)).toEqual({
        value: null,
        skipped: "the journal was pruned",
      });
      expect(await score(scorer, undefined)).toMatchObject({
        value: null,
        skipped: /no trajectory/,
      });
    }
  });
});
