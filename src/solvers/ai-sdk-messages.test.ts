import { describe, expect, it } from "vitest";
import type { ModelMessage } from "../core/model-types.js";
import { languageModelOptions, languageModelReply } from "./ai-sdk-messages.js";

const schema = { type: "object", properties: { a: { type: "number" } } };

describe("a canonical call as an AI SDK model's call options", () => {
  const messages: ModelMessage[] = [
    { role: "system", content: "Be brief." },
    {
      role: "user",
      content: [
        { type: "text", text: "What is this?" },
        { type: "image", url: "https://example.com/a.png" },
        { type: "image_url", image_url: { url: "data:image/png;base64,AAAA" } },
      ],
    },
    // OpenAI's spelling: arguments as JSON text, the answer by tool_call_id.
    {
      role: "assistant",
      content: null,
      tool_calls: [{ id: "c1", type: "function", function: { name: "add", arguments: '{"a":1}' } }],
    },
    { role: "tool", tool_call_id: "c1", content: "2" },
    // Canonical spelling.
    {
      role: "assistant",
      content: "",
      toolCalls: [{ id: "c2", name: "add", arguments: { a: 2 } }],
    },
    { role: "tool", toolCallId: "c2", content: [{ type: "text", text: "3" }] },
  ];
  const call = {
    messages,
    tools: [{ name: "add", description: "adds", parameters: schema }],
    toolChoice: { name: "add" } as const,
    temperature: 0,
    maxTokens: 64,
    params: { seed: 7 },
  };

  it("maps the prompt, tools, tool choice and settings (V4: tagged file data)", () => {
    const signal = new AbortController().signal;
    const options = languageModelOptions("v4", call, signal);
    expect(options).toMatchObject({
      seed: 7,
      temperature: 0,
      maxOutputTokens: 64,
      toolChoice: { type: "tool", toolName: "add" },
      tools: [{ type: "function", name: "add", description: "adds", inputSchema: schema }],
    });
    expect(options.abortSignal).toBe(signal);
    expect(options.prompt).toEqual([
      { role: "system", content: "Be brief." },
      {
        role: "user",
        content: [
          { type: "text", text: "What is this?" },
          {
            type: "file",
            mediaType: "image/*",
            data: { type: "url", url: new URL("https://example.com/a.png") },
          },
          { type: "file", mediaType: "image/png", data: { type: "data", data: "AAAA" } },
        ],
      },
      {
        role: "assistant",
        content: [{ type: "tool-call", toolCallId: "c1", toolName: "add", input: { a: 1 } }],
      },
      {
        role: "tool",
        content: [
          {
            type: "tool-result",
            toolCallId: "c1",
            toolName: "add",
            output: { type: "text", value: "2" },
          },
        ],
      },
      {
        role: "assistant",
        content: [{ type: "tool-call", toolCallId: "c2", toolName: "add", input: { a: 2 } }],
      },
      {
        role: "tool",
        content: [
          {
            type: "tool-result",
            toolCallId: "c2",
            toolName: "add",
            output: { type: "text", value: "3" },
          },
        ],
      },
    ]);
  });

  it("gives V2/V3 models file data as a URL or base64 text", () => {
    const { prompt } = languageModelOptions("v2", call);
    expect((prompt[1] as { content: unknown[] }).content.slice(1)).toEqual([
      { type: "file", mediaType: "image/*", data: new URL("https://example.com/a.png") },
      { type: "file", mediaType: "image/png", data: "AAAA" },
    ]);
  });

  it.each([
    ["auto", { type: "auto" }],
    ["none", { type: "none" }],
    ["required", { type: "required" }],
  ] as const)("maps the tool choice %s", (choice, expected) => {
    expect(languageModelOptions("v4", { messages: [], toolChoice: choice }).toolChoice).toEqual(
      expected,
    );
  });
});

describe("an AI SDK result as a canonical reply", () => {
  it("reads a V4 result: text and reasoning joined, tool calls parsed, nested usage, finish reason", () => {
    const reply = languageModelReply({
      content: [
        { type: "reasoning", text: "Add " },
        { type: "reasoning", text: "first." },
        { type: "text", text: "Let me " },
        { type: "text", text: "add." },
        { type: "tool-call", toolCallId: "c1", toolName: "add", input: '{"a":1}' },
        {
          type: "tool-call",
          toolCallId: "c2",
          toolName: "search",
          input: "{}",
          providerExecuted: true,
        },
      ],
      finishReason: { unified: "tool-calls", raw: "tool_calls" },
      usage: {
        inputTokens: { total: 1000, noCache: 200, cacheRead: 800, cacheWrite: 0 },
        outputTokens: { total: 100, text: 60, reasoning: 40 },
      },
    });
    expect(reply).toEqual({
      content: "Let me add.",
      reasoning: "Add first.",
      toolCalls: [{ id: "c1", name: "add", arguments: { a: 1 } }],
      finishReason: "tool_calls",
      message: {
        role: "assistant",
        content: "Let me add.",
        toolCalls: [{ id: "c1", name: "add", arguments: { a: 1 } }],
      },
      usage: {
        inputTokens: 1000,
        outputTokens: 100,
        cachedInputTokens: 800,
        cacheWriteTokens: 0,
        reasoningTokens: 40,
      },
    });
  });

  it("reads a V2 result: flat usage and a string finish reason", () => {
    const reply = languageModelReply({
      content: [{ type: "text", text: "4" }],
      finishReason: "length",
      usage: { inputTokens: 10, outputTokens: 2, cachedInputTokens: 4, reasoningTokens: 1 },
    });
    expect(reply).toMatchObject({
      content: "4",
      toolCalls: [],
      finishReason: "length",
      message: { role: "assistant", content: "4" },
      usage: { inputTokens: 10, outputTokens: 2, cachedInputTokens: 4, reasoningTokens: 1 },
    });
  });

  it.each([
    ["stop", "stop"],
    [{ unified: "content-filter", raw: "content_filter" }, "content_filter"],
    [{ unified: "error", raw: undefined }, "other"],
    ["unknown", "other"],
  ])("maps the finish reason %j to %s", (reason, expected) => {
    const usage = { inputTokens: undefined, outputTokens: undefined };
    const reply = languageModelReply({ content: [], finishReason: reason, usage });
    expect(reply.finishReason).toBe(expected);
    expect(reply.usage).toBeUndefined();
  });
});
