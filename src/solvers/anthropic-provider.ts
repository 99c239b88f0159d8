import * as z from "zod";
import type { Json } from "../core/json.js";
import type { FinishReason, ReplyTokens, ToolCall } from "../core/model-types.js";
import { anthropicMessages, anthropicToolChoice, anthropicTools } from "./anthropic-messages.js";
import { safeJson } from "./openai-provider.js";
import type { CanonicalCall, CanonicalReply, Provider } from "./provider.js";
import { Failure } from "./retrying-post.js";
import { replyMessage } from "./tool-calls.js";

/** The Messages API requires `max_tokens`; a call that gives none gets this. */
export const ANTHROPIC_DEFAULT_MAX_TOKENS = 4096;
/** The API version every request names (the `anthropic-version` header). */
export const ANTHROPIC_VERSION = "2023-06-01";

const blockSchema = z.object({ type: z.string() }).loose();

const responseSchema = z.object({
  content: z.array(blockSchema),
  stop_reason: z.string().nullish(),
  usage: z
    .object({
      input_tokens: z.number().nonnegative(),
      output_tokens: z.number().nonnegative(),
      cache_read_input_tokens: z.number().nonnegative().nullish(),
      cache_creation_input_tokens: z.number().nonnegative().nullish(),
    })
    .loose()
    .nullish(),
});

const errorBodySchema = z.object({
  type: z.literal("error"),
  error: z.object({ type: z.string().optional(), message: z.string().optional() }).loose(),
});

/**
 * Anthropic's native Messages API: POST `/v1/messages` with `x-api-key` and
 * `anthropic-version` (never an Authorization header), defaults from ANTHROPIC_BASE_URL
 * (https://api.anthropic.com) and ANTHROPIC_API_KEY. System messages are hoisted, tool calls are
 * `tool_use`/`tool_result` blocks, thinking blocks come back as `reasoning`, `cache_control` is
 * passed through, and `max_tokens` defaults to 4096. Its retries are the HTTP layer's: 429,
 * 529 (overloaded) and other 5xx, with retry-after.
 *
 * @example anthropic.chatRequest({ model: "claude-sonnet-4-5", messages }).path // "/v1/messages"
 */
export const anthropic: Provider<"ANTHROPIC_API_KEY"> = {
  name: "anthropic",
  defaultBaseURL: "https://api.anthropic.com",
  baseUrlEnv: "ANTHROPIC_BASE_URL",
  apiKeyEnv: "ANTHROPIC_API_KEY",
  headers(apiKey) {
    const headers: Record<string, string> = {
      "content-type": "application/json",
      "anthropic-version": ANTHROPIC_VERSION,
    };
    if (apiKey) headers["x-api-key"] = apiKey;
    return headers;
  },
  chatRequest(call) {
    return { path: "/v1/messages", body: messagesBody(call) };
  },
  chatReply,
  errorDetail(text) {
    const body = errorBodySchema.safeParse(safeJson(text));
    if (!body.success) return text;
    const { type, message } = body.data.error;
    return [type, message].filter((part) => part !== undefined).join(": ");
  },
};

function messagesBody(call: CanonicalCall): Record<string, Json> {
  const { system, messages } = anthropicMessages(call.messages);
  return {
    model: call.model,
    max_tokens: call.maxTokens ?? ANTHROPIC_DEFAULT_MAX_TOKENS,
    ...(system.length === 0 ? {} : { system }),
    messages,
    ...(call.tools === undefined ? {} : { tools: anthropicTools(call.tools) }),
    ...(call.toolChoice === undefined ? {} : { tool_choice: anthropicToolChoice(call.toolChoice) }),
    ...(call.temperature === undefined ? {} : { temperature: call.temperature }),
    ...call.params,
  };
}

const STOP_REASONS: Record<string, FinishReason> = {
  end_turn: "stop",
  stop_sequence: "stop",
  max_tokens: "length",
  tool_use: "tool_calls",
  refusal: "refusal",
};

function chatReply(text: string, says: (text: string) => string): CanonicalReply | Failure {
  const json = safeJson(text);
  const parsed = responseSchema.safeParse(json);
  if (!parsed.success) {
    if (errorBodySchema.safeParse(json).success) {
      return new Failure("provider", `error in response body${says(text)}`, 200);
    }
    return new Failure("provider", "malformed Messages API response", 200);
  }
  const { content: blocks, stop_reason, usage } = parsed.data;
  const texts: string[] = [];
  const reasoning: string[] = [];
  const thinking: Json[] = [];
  const toolCalls: ToolCall[] = [];
  for (const block of blocks) {
    if (block.type === "text" && typeof block.text === "string") texts.push(block.text);
    if (block.type === "tool_use" && typeof block.id === "string" && typeof block.name === "string")
      toolCalls.push({ id: block.id, name: block.name, arguments: (block.input ?? {}) as Json });
    if (block.type === "thinking" || block.type === "redacted_thinking") {
      // Sent back as they came (signature included): the API checks them on a tool-use turn.
      thinking.push(block as Json);
      if (typeof block.thinking === "string") reasoning.push(block.thinking);
    }
  }
  const content = texts.join("");
  const extra: Record<string, Json> = thinking.length === 0 ? {} : { thinking };
  return {
    content,
    toolCalls,
    finishReason: (stop_reason && STOP_REASONS[stop_reason]) || "other",
    ...(reasoning.length === 0 ? {} : { reasoning: reasoning.join("\n") }),
    message: replyMessage(content, toolCalls, extra),
    ...(usage == null ? {} : { usage: tokens(usage) }),
  };
}

/** Anthropic's input_tokens leave out the cache's: stet's inputTokens count them all. */
function tokens(usage: NonNullable<z.infer<typeof responseSchema>["usage"]>): ReplyTokens {
  const cached = usage.cache_read_input_tokens ?? 0;
  const written = usage.cache_creation_input_tokens ?? 0;
  return {
    inputTokens: usage.input_tokens + cached + written,
    outputTokens: usage.output_tokens,
    ...(usage.cache_read_input_tokens == null ? {} : { cachedInputTokens: cached }),
    ...(usage.cache_creation_input_tokens == null ? {} : { cacheWriteTokens: written }),
  };
}
