import type { UsageFigures } from "./types.js";
import type { Json } from "./json.js";

/** The wire formats stet speaks: OpenAI's chat completions (the default) and Anthropic's Messages. */
export type ProviderName = "openai" | "anthropic";

/**
 * One chat message in stet's canonical form. `role` is `system`, `user`, `assistant` or `tool`;
 * `content` is text or an array of parts (`{ type: "text", text }`,
 * `{ type: "image", url }` with an https or `data:` URL; OpenAI's `image_url` parts are
 * accepted too). An assistant message may carry `toolCalls`; a tool message answers one call by
 * `toolCallId`. OpenAI's own spellings (`tool_calls`, `tool_call_id`) are accepted as well, and
 * other members (`name`, `cache_control`, …) are passed through to the provider.
 */
export type ModelMessage = { role: string; content: Json } & { [key: string]: Json };

/** A tool the model may call: its parameters are a JSON Schema. */
export interface ModelTool {
  name: string;
  description?: string;
  parameters: Json;
  /** Passed through to providers that read it (Anthropic's prompt caching). */
  cache_control?: Json;
}

/** Whether and which tool the model must call. */
export type ToolChoice = "auto" | "none" | "required" | { name: string };

/** One tool call of a reply; `arguments` is the parsed JSON (the raw text when it is not JSON). */
export type ToolCall = { id: string; name: string; arguments: Json };

/** Why the model stopped; a provider's reason stet has no name for is `other`. */
export type FinishReason =
  "stop" | "length" | "tool_calls" | "content_filter" | "refusal" | "other";

/** A reply's token figures as a provider reports them, before any price (see UsageFigures). */
export type ReplyTokens = Omit<UsageFigures, "costUsd">;

/**
 * The canonical reply's parts that every provider fills: the text, the tool calls, why it
 * stopped, the reasoning when returned, and the assistant message to append to the conversation.
 */
export interface ReplyParts {
  /** The assistant's text ("" when the reply had no text). */
  content: string;
  /** The tool calls the model asked for (empty when none). */
  toolCalls: ToolCall[];
  finishReason: FinishReason;
  /** The model's reasoning (thinking), when the provider returned it. */
  reasoning?: string;
  /** The assistant message in canonical form, ready to append to `messages`. */
  message: ModelMessage;
}

/**
 * The provider a model id names: `anthropic:` means Anthropic's Messages API; any other prefix,
 * or none, the OpenAI-compatible chat format. An explicit `provider` wins.
 *
 * @example modelProvider("anthropic:claude-sonnet-4-5") // "anthropic"
 * @example modelProvider("llama3:8b") // "openai"
 */
export function modelProvider(model: string, explicit?: ProviderName): ProviderName {
  if (explicit !== undefined) return explicit;
  return /^anthropic:/i.test(model) ? "anthropic" : "openai";
}

/**
 * A reply's canonical parts, those it lacks filled in: no tool calls, finish reason `other`
 * (unknown), the assistant message of its text, tool calls and reasoning (defaultMessage). How
 * the journal replays entries recorded before replies had tool calls, and how a reply from a
 * hand-made model caller is completed.
 *
 * @example completeReply({ content: "4" }).message // { role: "assistant", content: "4" }
 */
export function completeReply(reply: { content: string } & Partial<ReplyParts>): ReplyParts {
  const toolCalls = reply.toolCalls ?? [];
  const parts: ReplyParts = {
    content: reply.content,
    toolCalls,
    finishReason: reply.finishReason ?? (toolCalls.length > 0 ? "tool_calls" : "other"),
    message: reply.message ?? defaultMessage({ ...reply, toolCalls }),
  };
  if (reply.reasoning !== undefined) parts.reasoning = reply.reasoning;
  return parts;
}

/**
 * The assistant message a reply's text, tool calls and reasoning make, as the OpenAI provider
 * builds it. The journal leaves a reply's message out of its entry when it is this one.
 *
 * @example defaultMessage({ content: "4", toolCalls: [] }) // { role: "assistant", content: "4" }
 */
export function defaultMessage(
  reply: Pick<ReplyParts, "content" | "toolCalls" | "reasoning">,
): ModelMessage {
  return {
    role: "assistant",
    content: reply.content,
    ...(reply.toolCalls.length === 0 ? {} : { toolCalls: reply.toolCalls }),
    ...(reply.reasoning === undefined ? {} : { reasoning: reply.reasoning }),
  };
}
