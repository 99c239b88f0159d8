import { describe, expect, it } from "vitest";
import { isChatResponse, openai, responseSchema } from "./openai-provider.js";
import type { ChatMessage } from "./provider.js";
import { Failure } from "./retrying-post.js";

const messages = [{ role: "user", content: "2+2?" }];
const says = (text: string) => `: ${openai.errorDetail(text)}`;

describe("the openai provider", () => {
  it("has OpenAI's endpoint and credential defaults", () => {
    expect(openai).toMatchObject({
      name: "openai",
      defaultBaseURL: "https://api.openai.com/v1",
      baseUrlEnv: "OPENAI_BASE_URL",
      apiKeyEnv: "OPENAI_API_KEY",
    });
    expect(openai.headers("sk-x")).toEqual({
      "content-type": "application/json",
      authorization: "Bearer sk-x",
    });
    expect(openai.headers(undefined)).toEqual({ "content-type": "application/json" });
  });

  it.each([
    ["a bare call", { model: "gpt-4o-mini", messages }, { model: "gpt-4o-mini", messages }],
    [
      "temperature, max_tokens and params",
      { model: "llama3:8b", messages, temperature: 0, maxTokens: 5, params: { seed: 7 } },
      { model: "llama3:8b", messages, temperature: 0, max_tokens: 5, seed: 7 },
    ],
    [
      "a reasoning model's max_completion_tokens",
      { model: "o3-mini", messages, maxTokens: 5 },
      { model: "o3-mini", messages, max_completion_tokens: 5 },
    ],
    [
      "params that override fields",
      { model: "gpt-5", messages, temperature: 1, params: { temperature: 0.5, tools: [] } },
      { model: "gpt-5", messages, temperature: 0.5, tools: [] },
    ],
  ])("maps %s to a /chat/completions body", (_what, call, body) => {
    expect(openai.chatRequest(call)).toEqual({ path: "/chat/completions", body });
  });

  it("sends OpenAI-format messages as they are (the same array)", () => {
    const wire: ChatMessage[] = [
      { role: "user", content: "2+2?" },
      {
        role: "assistant",
        content: null,
        tool_calls: [{ id: "c1", type: "function", function: { name: "add", arguments: "{}" } }],
      },
      { role: "tool", tool_call_id: "c1", content: "4" },
    ];
    expect(openai.chatRequest({ model: "m", messages: wire }).body.messages).toBe(wire);
  });

  it("maps canonical tools, tool choice, tool calls, tool results and images to the wire", () => {
    const { body } = openai.chatRequest({
      model: "m",
      messages: [
        {
          role: "user",
          content: [
            { type: "text", text: "what is this?" },
            { type: "image", url: "data:image/png;base64,AAA" },
          ],
        },
        {
          role: "assistant",
          content: "",
          reasoning: "think",
          toolCalls: [{ id: "c1", name: "add", arguments: { a: 1 } }],
        },
        { role: "tool", toolCallId: "c1", content: "2" },
      ],
      tools: [{ name: "add", description: "adds", parameters: { type: "object" } }],
      toolChoice: { name: "add" },
    });
    expect(body).toEqual({
      model: "m",
      messages: [
        {
          role: "user",
          content: [
            { type: "text", text: "what is this?" },
            { type: "image_url", image_url: { url: "data:image/png;base64,AAA" } },
          ],
        },
        {
          role: "assistant",
          content: null,
          tool_calls: [
            { id: "c1", type: "function", function: { name: "add", arguments: '{"a":1}' } },
          ],
        },
        { role: "tool", content: "2", tool_call_id: "c1" },
      ],
      tools: [
        {
          type: "function",
          function: { name: "add", description: "adds", parameters: { type: "object" } },
        },
      ],
      tool_choice: { type: "function", function: { name: "add" } },
    });
  });

  it.each([
    [
      "content and usage",
      {
        choices: [{ message: { content: "4" } }],
        usage: { prompt_tokens: 3, completion_tokens: 1 },
      },
      {
        content: "4",
        toolCalls: [],
        finishReason: "other",
        message: { role: "assistant", content: "4" },
        usage: { inputTokens: 3, outputTokens: 1 },
      },
    ],
    [
      "null content, no usage",
      { choices: [{ message: { content: null }, finish_reason: "length" }] },
      {
        content: "",
        toolCalls: [],
        finishReason: "length",
        message: { role: "assistant", content: "" },
      },
    ],
    [
      "tool calls (arguments parsed; broken JSON kept as text)",
      {
        choices: [
          {
            message: {
              content: null,
              tool_calls: [
                {
                  id: "c1",
                  type: "function",
                  function: { name: "add", arguments: '{"a":2,"b":2}' },
                },
                { id: "c2", type: "function", function: { name: "echo", arguments: "{oops" } },
              ],
            },
            finish_reason: "tool_calls",
          },
        ],
      },
      {
        content: "",
        toolCalls: [
          { id: "c1", name: "add", arguments: { a: 2, b: 2 } },
          { id: "c2", name: "echo", arguments: "{oops" },
        ],
        finishReason: "tool_calls",
        message: {
          role: "assistant",
          content: "",
          toolCalls: [
            { id: "c1", name: "add", arguments: { a: 2, b: 2 } },
            { id: "c2", name: "echo", arguments: "{oops" },
          ],
        },
      },
    ],
    [
      "a refusal and reasoning",
      {
        choices: [
          {
            message: { content: null, refusal: "I can't.", reasoning_content: "unsafe" },
            finish_reason: "stop",
          },
        ],
      },
      {
        content: "I can't.",
        toolCalls: [],
        finishReason: "refusal",
        reasoning: "unsafe",
        message: { role: "assistant", content: "I can't.", reasoning: "unsafe" },
      },
    ],
    [
      "a content filter stop",
      { choices: [{ message: { content: "" }, finish_reason: "content_filter" }] },
      {
        content: "",
        toolCalls: [],
        finishReason: "content_filter",
        message: { role: "assistant", content: "" },
      },
    ],
    [
      "cached and reasoning tokens",
      {
        choices: [{ message: { content: "4" } }],
        usage: {
          prompt_tokens: 1000,
          completion_tokens: 100,
          prompt_tokens_details: { cached_tokens: 800, audio_tokens: 0 },
          completion_tokens_details: { reasoning_tokens: 40 },
        },
      },
      {
        content: "4",
        toolCalls: [],
        finishReason: "other",
        message: { role: "assistant", content: "4" },
        usage: {
          inputTokens: 1000,
          outputTokens: 100,
          cachedInputTokens: 800,
          reasoningTokens: 40,
        },
      },
    ],
    [
      "null token details (vLLM)",
      {
        choices: [{ message: { content: "4" } }],
        usage: {
          prompt_tokens: 3,
          completion_tokens: 1,
          prompt_tokens_details: null,
          completion_tokens_details: { reasoning_tokens: null },
        },
      },
      {
        content: "4",
        toolCalls: [],
        finishReason: "other",
        message: { role: "assistant", content: "4" },
        usage: { inputTokens: 3, outputTokens: 1 },
      },
    ],
  ])("maps a reply with %s", (_what, body, reply) => {
    expect(openai.chatReply(JSON.stringify(body), says)).toEqual(reply);
  });

  it.each([
    ["not JSON", "<html>", new Failure("provider", "malformed chat completion response", 200)],
    [
      "no choices",
      JSON.stringify({ choices: [] }),
      new Failure("provider", "malformed chat completion response", 200),
    ],
    [
      "an error body in a 200 (OpenRouter)",
      JSON.stringify({ error: { message: "upstream down", code: 502 } }),
      new Failure("provider", "error in response body: upstream down", 502),
    ],
  ])("turns a reply that is %s into a Failure", (_what, text, failure) => {
    expect(openai.chatReply(text, says)).toEqual(failure);
  });

  it.each([
    ["an error object", JSON.stringify({ error: { message: "bad key" } }), "bad key"],
    ["an error string", JSON.stringify({ error: "overloaded" }), "overloaded"],
    ["plain text", "Bad Gateway", "Bad Gateway"],
  ])("reads the server's words from %s", (_what, text, detail) => {
    expect(openai.errorDetail(text)).toBe(detail);
  });
});

describe("a chat completion's shape, checked without zod", () => {
  const message = { role: "assistant", content: "4" };
  const choice = { index: 0, message, finish_reason: "stop" };
  const usage = { prompt_tokens: 3, completion_tokens: 1, total_tokens: 4 };
  const call = { id: "c1", type: "function", function: { name: "add", arguments: "{}" } };
  it.each([
    ["a plain reply", { id: "x", choices: [choice], usage }],
    ["no usage", { choices: [choice] }],
    ["null usage and finish reason", { choices: [{ message, finish_reason: null }], usage: null }],
    [
      "usage details",
      {
        choices: [choice],
        usage: {
          ...usage,
          prompt_tokens_details: { cached_tokens: 2 },
          completion_tokens_details: { reasoning_tokens: null },
        },
      },
    ],
    ["null details", { choices: [choice], usage: { ...usage, prompt_tokens_details: null } }],
    [
      "tool calls",
      {
        choices: [{ message: { content: null, tool_calls: [call] }, finish_reason: "tool_calls" }],
      },
    ],
    [
      "reasoning and refusal",
      {
        choices: [
          { message: { content: null, refusal: "no", reasoning: "r", reasoning_content: null } },
        ],
      },
    ],
    ["no choices", { choices: [] }],
    ["choices not an array", { choices: {} }],
    ["a message that is an array", { choices: [{ message: [] }] }],
    ["content a number", { choices: [{ message: { content: 4 } }] }],
    ["a second choice malformed", { choices: [choice, { message: null }] }],
    ["finish reason a number", { choices: [{ message, finish_reason: 1 }] }],
    ["negative tokens", { choices: [choice], usage: { prompt_tokens: -1, completion_tokens: 1 } }],
    [
      "infinite tokens",
      { choices: [choice], usage: JSON.parse('{"prompt_tokens":1e999,"completion_tokens":1}') },
    ],
    ["tokens missing", { choices: [choice], usage: { prompt_tokens: 1 } }],
    ["usage a string", { choices: [choice], usage: "none" }],
    [
      "cached tokens a string",
      { choices: [choice], usage: { ...usage, prompt_tokens_details: { cached_tokens: "2" } } },
    ],
    ["details an array", { choices: [choice], usage: { ...usage, completion_tokens_details: [] } }],
    [
      "a tool call without an id",
      { choices: [{ message: { tool_calls: [{ function: { name: "f" } }] } }] },
    ],
    [
      "tool call arguments an object",
      {
        choices: [
          { message: { tool_calls: [{ ...call, function: { name: "f", arguments: {} } }] } },
        ],
      },
    ],
    ["tool calls not an array", { choices: [{ message: { tool_calls: call } }] }],
    ["an error body", { error: { message: "overloaded", code: 529 } }],
    ["not an object", "4"],
    ["null", null],
  ])("agrees with the schema on %s", (_what, body) => {
    const fast = isChatResponse(body);
    expect(fast).toBe(responseSchema.safeParse(body).success);
    // A plain reply never falls back on zod.
    if (_what === "a plain reply") expect(fast).toBe(true);
  });
});
