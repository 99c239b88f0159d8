import { describe, expect, it } from "vitest";
import { anthropic } from "./anthropic-provider.js";
import type { ChatMessage } from "./provider.js";
import { Failure } from "./retrying-post.js";

const says = (text: string) => `: ${anthropic.errorDetail(text)}`;
const reply = (body: unknown) => anthropic.chatReply(JSON.stringify(body), says);

describe("the anthropic provider", () => {
  it("has Anthropic's endpoint and credential defaults, and never an Authorization header", () => {
    expect(anthropic).toMatchObject({
      name: "anthropic",
      defaultBaseURL: "https://api.anthropic.com",
      baseUrlEnv: "ANTHROPIC_BASE_URL",
      apiKeyEnv: "ANTHROPIC_API_KEY",
    });
    expect(anthropic.headers("sk-ant-x")).toEqual({
      "content-type": "application/json",
      "anthropic-version": "2023-06-01",
      "x-api-key": "sk-ant-x",
    });
    expect(anthropic.headers(undefined)).toEqual({
      "content-type": "application/json",
      "anthropic-version": "2023-06-01",
    });
  });

  it("hoists system messages, defaults max_tokens and passes params through", () => {
    const request = anthropic.chatRequest({
      model: "claude-sonnet-4-5",
      messages: [
        { role: "system", content: "Be brief." },
        { role: "user", content: "2+2?" },
      ],
      temperature: 0,
      params: { top_k: 5 },
    });
    expect(request).toEqual({
      path: "/v1/messages",
      body: {
        model: "claude-sonnet-4-5",
        max_tokens: 4096,
        system: [{ type: "text", text: "Be brief." }],
        messages: [{ role: "user", content: [{ type: "text", text: "2+2?" }] }],
        temperature: 0,
        top_k: 5,
      },
    });
    expect(anthropic.chatRequest({ model: "m", messages: [], maxTokens: 9 }).body).toEqual({
      model: "m",
      max_tokens: 9,
      messages: [],
    });
  });

  it.each<[string, ChatMessage[]]>([
    [
      "canonical",
      [
        { role: "user", content: "add 2 and 2" },
        {
          role: "assistant",
          content: "",
          toolCalls: [{ id: "tu_1", name: "add", arguments: { a: 2, b: 2 } }],
        },
        { role: "tool", toolCallId: "tu_1", content: "4" },
      ],
    ],
    [
      "OpenAI-format",
      [
        { role: "user", content: "add 2 and 2" },
        {
          role: "assistant",
          content: null,
          tool_calls: [
            { id: "tu_1", type: "function", function: { name: "add", arguments: '{"a":2,"b":2}' } },
          ],
        },
        { role: "tool", tool_call_id: "tu_1", content: "4" },
      ],
    ],
  ])("maps %s tool calls and results to tool_use and tool_result blocks", (_what, messages) => {
    const { body } = anthropic.chatRequest({
      model: "m",
      messages,
      tools: [{ name: "add", description: "adds", parameters: { type: "object" } }],
      toolChoice: "required",
    });
    expect(body).toMatchObject({
      messages: [
        { role: "user", content: [{ type: "text", text: "add 2 and 2" }] },
        {
          role: "assistant",
          content: [{ type: "tool_use", id: "tu_1", name: "add", input: { a: 2, b: 2 } }],
        },
        {
          role: "user",
          content: [
            { type: "tool_result", tool_use_id: "tu_1", content: [{ type: "text", text: "4" }] },
          ],
        },
      ],
      tools: [{ name: "add", description: "adds", input_schema: { type: "object" } }],
      tool_choice: { type: "any" },
    });
  });

  it("merges a turn's tool results into one user turn, and passes cache_control and images", () => {
    const { body } = anthropic.chatRequest({
      model: "m",
      messages: [
        {
          role: "system",
          content: [{ type: "text", text: "long rules", cache_control: { type: "ephemeral" } }],
        },
        {
          role: "user",
          content: [
            { type: "image", url: "data:image/png;base64,AAAA" },
            { type: "image_url", image_url: { url: "https://example.com/a.png" } },
          ],
          cache_control: { type: "ephemeral" },
        },
        { role: "tool", toolCallId: "a", content: "1" },
        { role: "tool", toolCallId: "b", content: "2", isError: true },
      ],
    });
    expect(body.system).toEqual([
      { type: "text", text: "long rules", cache_control: { type: "ephemeral" } },
    ]);
    expect(body.messages).toEqual([
      {
        role: "user",
        content: [
          { type: "image", source: { type: "base64", media_type: "image/png", data: "AAAA" } },
          {
            type: "image",
            source: { type: "url", url: "https://example.com/a.png" },
            cache_control: { type: "ephemeral" },
          },
          { type: "tool_result", tool_use_id: "a", content: [{ type: "text", text: "1" }] },
          {
            type: "tool_result",
            tool_use_id: "b",
            content: [{ type: "text", text: "2" }],
            is_error: true,
          },
        ],
      },
    ]);
  });

  it("reads text, tool_use, thinking and cache usage into the canonical reply", () => {
    const thinking = { type: "thinking", thinking: "2 and 2", signature: "sig" };
    expect(
      reply({
        type: "message",
        role: "assistant",
        model: "claude-sonnet-4-5",
        content: [
          thinking,
          { type: "text", text: "Adding." },
          { type: "tool_use", id: "tu_1", name: "add", input: { a: 2, b: 2 } },
        ],
        stop_reason: "tool_use",
        usage: {
          input_tokens: 100,
          output_tokens: 20,
          cache_read_input_tokens: 800,
          cache_creation_input_tokens: 50,
        },
      }),
    ).toEqual({
      content: "Adding.",
      toolCalls: [{ id: "tu_1", name: "add", arguments: { a: 2, b: 2 } }],
      finishReason: "tool_calls",
      reasoning: "2 and 2",
      message: {
        role: "assistant",
        content: "Adding.",
        toolCalls: [{ id: "tu_1", name: "add", arguments: { a: 2, b: 2 } }],
        thinking: [thinking],
      },
      usage: {
        inputTokens: 950,
        outputTokens: 20,
        cachedInputTokens: 800,
        cacheWriteTokens: 50,
      },
    });
  });

  it("sends a reply's message back as the same blocks (thinking first, signature kept)", () => {
    const thinking = { type: "thinking", thinking: "hm", signature: "sig" };
    const got = reply({
      content: [thinking, { type: "tool_use", id: "t", name: "f", input: {} }],
      stop_reason: "tool_use",
    });
    if (got instanceof Failure) throw new Error(got.message);
    const messages = [{ role: "user" as const, content: "go" }, got.message];
    const { body } = anthropic.chatRequest({ model: "m", messages });
    expect(body.messages).toEqual([
      { role: "user", content: [{ type: "text", text: "go" }] },
      {
        role: "assistant",
        content: [thinking, { type: "tool_use", id: "t", name: "f", input: {} }],
      },
    ]);
  });

  it("opens a conversation that starts with the assistant's turn with a user turn (the API refuses it otherwise)", () => {
    const { body } = anthropic.chatRequest({
      model: "m",
      messages: [
        { role: "system", content: "You are a customer." },
        { role: "assistant", content: "Where is my parcel?" },
        { role: "user", content: "On its way." },
      ],
    });
    expect(body.messages).toEqual([
      { role: "user", content: [{ type: "text", text: "(The conversation begins.)" }] },
      { role: "assistant", content: [{ type: "text", text: "Where is my parcel?" }] },
      { role: "user", content: [{ type: "text", text: "On its way." }] },
    ]);
  });

  it.each([
    ["end_turn", "stop"],
    ["stop_sequence", "stop"],
    ["max_tokens", "length"],
    ["refusal", "refusal"],
    ["pause_turn", "other"],
  ])("maps stop_reason %s to %s", (stop, finish) => {
    expect(reply({ content: [], stop_reason: stop })).toMatchObject({ finishReason: finish });
  });

  it("reads the error body's type and message, and refuses a malformed reply", () => {
    const error = { type: "error", error: { type: "overloaded_error", message: "Overloaded" } };
    expect(anthropic.errorDetail(JSON.stringify(error))).toBe("overloaded_error: Overloaded");
    expect(anthropic.errorDetail("Bad Gateway")).toBe("Bad Gateway");
    expect(reply(error)).toEqual(
      new Failure("provider", "error in response body: overloaded_error: Overloaded", 200),
    );
    expect(anthropic.chatReply("<html>", says)).toEqual(
      new Failure("provider", "malformed Messages API response", 200),
    );
  });
});
