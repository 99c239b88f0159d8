import * as z from "zod";
import type { Json } from "../core/json.js";
import type { FinishReason, ReplyTokens, ToolCall } from "../core/model-types.js";
import { openaiMessages, openaiToolChoice, openaiTools } from "./openai-messages.js";
import type { CanonicalCall, CanonicalReply, Provider } from "./provider.js";
import { Failure } from "./retrying-post.js";
import { parseArguments, replyMessage } from "./tool-calls.js";

const toolCallSchema = z
  .object({
    id: z.string(),
    function: z.object({ name: z.string(), arguments: z.string().nullish() }).loose(),
  })
  .loose();

const messageSchema = z
  .object({
    content: z.string().nullish(),
    tool_calls: z.array(toolCallSchema).nullish(),
    refusal: z.string().nullish(),
    // DeepSeek, vLLM and llama.cpp say reasoning_content; OpenRouter says reasoning.
    reasoning_content: z.string().nullish(),
    reasoning: z.string().nullish(),
  })
  .loose();

/** A chat completion as stet reads it (`isChatResponse` is its fast path). */
export const responseSchema = z.object({
  choices: z
    .array(z.object({ message: messageSchema, finish_reason: z.string().nullish() }).loose())
    .min(1),
  usage: z
    .object({
      prompt_tokens: z.number().nonnegative(),
      completion_tokens: z.number().nonnegative(),
      prompt_tokens_details: z
        .object({ cached_tokens: z.number().nonnegative().nullish() })
        .loose()
        .nullish(),
      completion_tokens_details: z
        .object({ reasoning_tokens: z.number().nonnegative().nullish() })
        .loose()
        .nullish(),
    })
    .loose()
    .nullish(),
});

const errorBodySchema = z.object({
  error: z.union([
    z.string(),
    z.object({ message: z.string().optional(), code: z.unknown().optional() }).loose(),
  ]),
});

/**
 * The OpenAI-compatible chat format (OpenAI, vLLM, Ollama, llama.cpp, OpenRouter): POST
 * `/chat/completions` with a Bearer key, defaults from OPENAI_BASE_URL and OPENAI_API_KEY.
 *
 * @example openai.chatRequest({ model: "gpt-4o-mini", messages }).path // "/chat/completions"
 */
export const openai: Provider<"OPENAI_API_KEY"> = {
  name: "openai",
  defaultBaseURL: "https://api.openai.com/v1",
  baseUrlEnv: "OPENAI_BASE_URL",
  apiKeyEnv: "OPENAI_API_KEY",
  headers(apiKey) {
    const headers: Record<string, string> = { "content-type": "application/json" };
    if (apiKey) headers.authorization = `Bearer ${apiKey}`;
    return headers;
  },
  chatRequest(call) {
    return { path: "/chat/completions", body: chatBody(call) };
  },
  chatReply,
  errorDetail(text) {
    const body = errorBodySchema.safeParse(safeJson(text));
    const error = body.success ? body.data.error : undefined;
    return typeof error === "string" ? error : (error?.message ?? text);
  },
};

function chatBody(call: CanonicalCall): Record<string, Json> {
  // OpenAI's reasoning models reject max_tokens; most other servers only know max_tokens.
  const maxTokensField = /^(o\d|gpt-5)/.test(call.model) ? "max_completion_tokens" : "max_tokens";
  return {
    model: call.model,
    messages: openaiMessages(call.messages),
    ...(call.tools === undefined ? {} : { tools: openaiTools(call.tools) }),
    ...(call.toolChoice === undefined ? {} : { tool_choice: openaiToolChoice(call.toolChoice) }),
    ...(call.temperature === undefined ? {} : { temperature: call.temperature }),
    ...(call.maxTokens === undefined ? {} : { [maxTokensField]: call.maxTokens }),
    ...call.params,
  };
}

type ChatResponse = z.infer<typeof responseSchema>;

function chatReply(text: string, says: (text: string) => string): CanonicalReply | Failure {
  const json = safeJson(text);
  // The shape checked by hand first (every reply is read here, and zod's parse of it cost more
  // than the rest of the read); the schema decides, and words the failure, for anything else.
  const parsed:
    { success: true; data: ChatResponse } | ReturnType<typeof responseSchema.safeParse> =
    isChatResponse(json) ? { success: true, data: json } : responseSchema.safeParse(json);
  if (parsed.success) {
    const { choices, usage } = parsed.data;
    return {
      ...replyParts(choices[0]!.message, choices[0]!.finish_reason),
      ...(usage == null ? {} : { usage: usageOf(usage) }),
    };
  }
  // Some gateways (OpenRouter) report upstream failures as a 200 whose body is an error.
  const failure = errorBodySchema.safeParse(json);
  if (failure.success && typeof failure.data.error === "object") {
    const code = failure.data.error.code;
    return new Failure(
      "provider",
      `error in response body${says(text)}`,
      typeof code === "number" ? code : 200,
    );
  }
  return new Failure("provider", "malformed chat completion response", 200);
}

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === "object" && v !== null && !Array.isArray(v);
const isText = (v: unknown): boolean => v == null || typeof v === "string";
const isCount = (v: unknown): boolean => typeof v === "number" && Number.isFinite(v) && v >= 0;
const isOptionalCount = (v: unknown): boolean => v == null || isCount(v);

/**
 * Whether `json` is a chat completion that `responseSchema` accepts, checked without zod: true
 * only where the schema's parse succeeds (members it does not name pass through, as its loose
 * objects let them, and are never read); false sends the value to the schema.
 *
 * @example isChatResponse({ choices: [{ message: { content: "4" }, finish_reason: "stop" }] }) // true
 */
export function isChatResponse(json: unknown): json is ChatResponse {
  if (!isObject(json) || !Array.isArray(json.choices) || json.choices.length === 0) return false;
  for (const choice of json.choices as unknown[]) {
    if (!isObject(choice) || !isText(choice.finish_reason)) return false;
    const message = choice.message;
    if (!isObject(message)) return false;
    if (!isText(message.content) || !isText(message.refusal)) return false;
    if (!isText(message.reasoning_content) || !isText(message.reasoning)) return false;
    const calls = message.tool_calls;
    if (calls != null && !(Array.isArray(calls) && calls.every(isToolCall))) return false;
  }
  const usage = json.usage;
  if (usage == null) return true;
  if (!isObject(usage) || !isCount(usage.prompt_tokens) || !isCount(usage.completion_tokens)) {
    return false;
  }
  const prompt = usage.prompt_tokens_details;
  const completion = usage.completion_tokens_details;
  return (
    (prompt == null || (isObject(prompt) && isOptionalCount(prompt.cached_tokens))) &&
    (completion == null || (isObject(completion) && isOptionalCount(completion.reasoning_tokens)))
  );
}

function isToolCall(call: unknown): boolean {
  if (!isObject(call) || typeof call.id !== "string") return false;
  const fn = call.function;
  return isObject(fn) && typeof fn.name === "string" && isText(fn.arguments);
}

function replyParts(
  message: z.infer<typeof messageSchema>,
  finish: string | null | undefined,
): Omit<CanonicalReply, "usage"> {
  const content = message.content ?? message.refusal ?? "";
  const toolCalls: ToolCall[] = (message.tool_calls ?? []).map((call) => ({
    id: call.id,
    name: call.function.name,
    arguments: parseArguments(call.function.arguments ?? ""),
  }));
  const reasoning = message.reasoning_content ?? message.reasoning ?? undefined;
  const extra: { reasoning?: string } = reasoning === undefined ? {} : { reasoning };
  return {
    content,
    toolCalls,
    finishReason: finishReason(finish, message.refusal != null, toolCalls.length > 0),
    ...extra,
    message: replyMessage(content, toolCalls, reasoning === undefined ? {} : { reasoning }),
  };
}

const FINISH_REASONS: Record<string, FinishReason> = {
  stop: "stop",
  length: "length",
  tool_calls: "tool_calls",
  function_call: "tool_calls",
  content_filter: "content_filter",
};

function finishReason(
  finish: string | null | undefined,
  refused: boolean,
  called: boolean,
): FinishReason {
  if (refused) return "refusal";
  if (finish == null) return called ? "tool_calls" : "other";
  return FINISH_REASONS[finish] ?? "other";
}

/** OpenAI's usage: prompt tokens include the cached ones, completion tokens the reasoning ones. */
function usageOf(usage: NonNullable<z.infer<typeof responseSchema>["usage"]>): ReplyTokens {
  const figures: ReplyTokens = {
    inputTokens: usage.prompt_tokens,
    outputTokens: usage.completion_tokens,
  };
  const cached = usage.prompt_tokens_details?.cached_tokens;
  const reasoning = usage.completion_tokens_details?.reasoning_tokens;
  if (cached != null) figures.cachedInputTokens = cached;
  if (reasoning != null) figures.reasoningTokens = reasoning;
  return figures;
}

/**
 * The JSON in `text`, or undefined when it is not JSON.
 *
 * @example safeJson("{") // undefined
 */
export function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
