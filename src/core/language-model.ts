import type { Json } from "./json.js";
import type { FinishReason, ReplyTokens } from "./model-types.js";

/**
 * The call options of an AI SDK model's `doGenerate`/`doStream`, as much of them as stet reads
 * (the prompt, and the members a call's identity leaves out). Declared here, not imported, so
 * stet builds and loads without the AI SDK.
 */
export type LanguageModelCallOptions = {
  prompt: readonly unknown[];
  abortSignal?: AbortSignal | undefined;
  headers?: Record<string, string | undefined> | undefined;
} & { [option: string]: unknown };

/**
 * An AI SDK language model (`LanguageModelV2`, `V3` or `V4` of `@ai-sdk/provider`), by its
 * shape: what `openai.chat("gpt-4o-mini")` or `anthropic("claude-sonnet-4-5")` returns. stet
 * accepts one wherever it takes a model id and never imports the AI SDK itself: the eval that
 * passes one has installed the provider package.
 */
export interface LanguageModelLike {
  readonly specificationVersion: "v2" | "v3" | "v4";
  readonly provider: string;
  readonly modelId: string;
  doGenerate(options: LanguageModelCallOptions): PromiseLike<unknown>;
  doStream?(options: LanguageModelCallOptions): PromiseLike<unknown>;
}

/**
 * Whether `value` is an AI SDK language model (see LanguageModelLike), told by its shape.
 *
 * @example isLanguageModel("gpt-4o-mini") // false
 */
export function isLanguageModel(value: unknown): value is LanguageModelLike {
  if (typeof value !== "object" || value === null) return false;
  const model = value as Partial<Record<keyof LanguageModelLike, unknown>>;
  return (
    (model.specificationVersion === "v2" ||
      model.specificationVersion === "v3" ||
      model.specificationVersion === "v4") &&
    typeof model.provider === "string" &&
    typeof model.modelId === "string" &&
    typeof model.doGenerate === "function"
  );
}

/**
 * A model call's identity for the journal: the model's provider and id and the call options
 * without `abortSignal` and `headers` (the prompt, tools and settings), as JSON.
 *
 * @example languageModelCallIdentity(model, { prompt }) // { provider: "openai.chat", model: "gpt-4o-mini", options: { prompt } }
 */
export function languageModelCallIdentity(
  model: LanguageModelLike,
  options: LanguageModelCallOptions,
): Json {
  const { abortSignal: _signal, headers: _headers, ...rest } = options;
  return { provider: model.provider, model: model.modelId, options: toJson(rest) };
}

/**
 * The token figures of an AI SDK usage: V3/V4's nested `{ inputTokens: { total, cacheRead,
 * cacheWrite }, outputTokens: { total, reasoning } }` or V2's flat `{ inputTokens, outputTokens,
 * cachedInputTokens, reasoningTokens }`. Undefined when it has no token counts.
 *
 * @example languageModelTokens({ inputTokens: 10, outputTokens: 2 }) // { inputTokens: 10, outputTokens: 2 }
 */
export function languageModelTokens(usage: unknown): ReplyTokens | undefined {
  if (typeof usage !== "object" || usage === null) return undefined;
  const { inputTokens, outputTokens } = usage as Record<string, unknown>;
  const nested = typeof inputTokens === "object" || typeof outputTokens === "object";
  const input = nested ? member(inputTokens, "total") : count(inputTokens);
  const output = nested ? member(outputTokens, "total") : count(outputTokens);
  if (input === undefined && output === undefined) return undefined;
  const tokens: ReplyTokens = { inputTokens: input ?? 0, outputTokens: output ?? 0 };
  const flat = usage as Record<string, unknown>;
  const cached = nested ? member(inputTokens, "cacheRead") : count(flat.cachedInputTokens);
  const written = nested ? member(inputTokens, "cacheWrite") : undefined;
  const reasoning = nested ? member(outputTokens, "reasoning") : count(flat.reasoningTokens);
  if (cached !== undefined) tokens.cachedInputTokens = cached;
  if (written !== undefined) tokens.cacheWriteTokens = written;
  if (reasoning !== undefined) tokens.reasoningTokens = reasoning;
  return tokens;
}

function member(value: unknown, name: string): number | undefined {
  return typeof value === "object" && value !== null
    ? count((value as Record<string, unknown>)[name])
    : undefined;
}

function count(value: unknown): number | undefined {
  return typeof value === "number" && Number.isFinite(value) && value >= 0 ? value : undefined;
}

const FINISH_REASONS: Readonly<Record<string, FinishReason>> = {
  stop: "stop",
  length: "length",
  "content-filter": "content_filter",
  "tool-calls": "tool_calls",
};

/**
 * A finish reason of the AI SDK (V2's string, V3/V4's `{ unified, raw }`) in stet's terms.
 *
 * @example languageModelFinish({ unified: "tool-calls", raw: "tool_calls" }) // "tool_calls"
 */
export function languageModelFinish(reason: unknown): FinishReason {
  const unified =
    typeof reason === "object" && reason !== null
      ? (reason as { unified?: unknown }).unified
      : reason;
  return (typeof unified === "string" ? FINISH_REASONS[unified] : undefined) ?? "other";
}

/**
 * A `doGenerate` result as JSON the journal can hold: the content, finish reason, usage,
 * warnings, provider metadata and response id, model and timestamp (an ISO string). The raw
 * request and response bodies and the response headers are left out (large, and headers may
 * carry what the provider set); bytes become base64. restoreGenerateResult reverses it.
 *
 * @example generateResultJson({ content: [{ type: "text", text: "4" }], finishReason: "stop", usage })
 */
export function generateResultJson(result: unknown): Json {
  const { request: _request, response, ...rest } = (result ?? {}) as Record<string, unknown>;
  const json = toJson(rest) as Record<string, Json>;
  if (typeof response === "object" && response !== null) {
    const { headers: _headers, body: _body, ...metadata } = response as Record<string, unknown>;
    json.response = toJson(metadata);
  }
  return json;
}

/**
 * A journaled `doGenerate` result as the AI SDK expects it back: the response's timestamp a
 * Date again.
 *
 * @example restoreGenerateResult(generateResultJson(result))
 */
export function restoreGenerateResult(json: Json): Record<string, unknown> {
  const result = { ...(json as Record<string, unknown>) };
  const response = result.response as Record<string, unknown> | undefined;
  if (response && typeof response.timestamp === "string") {
    result.response = { ...response, timestamp: new Date(response.timestamp) };
  }
  return result;
}

/**
 * A value as JSON: URLs and Dates as strings, bytes as base64, functions, symbols, signals and
 * `undefined` members dropped.
 *
 * @example toJson({ url: new URL("https://x/a.png"), n: undefined }) // { url: "https://x/a.png" }
 */
export function toJson(value: unknown): Json {
  if (value === null || typeof value === "string" || typeof value === "boolean") return value;
  if (typeof value === "number") return Number.isFinite(value) ? value : null;
  if (typeof value !== "object") return null;
  if (value instanceof URL) return value.href;
  if (value instanceof Date) return value.toISOString();
  if (value instanceof Uint8Array) return base64(value);
  if (value instanceof ArrayBuffer) return base64(new Uint8Array(value));
  if (Array.isArray(value)) return value.map(toJson);
  const out: Record<string, Json> = {};
  for (const [key, member] of Object.entries(value)) {
    if (member === undefined || typeof member === "function" || typeof member === "symbol") {
      continue;
    }
    if (typeof AbortSignal !== "undefined" && member instanceof AbortSignal) continue;
    out[key] = toJson(member);
  }
  return out;
}

function base64(bytes: Uint8Array): string {
  let binary = "";
  for (let i = 0; i < bytes.length; i += 0x8000) {
    binary += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  }
  return btoa(binary);
}
