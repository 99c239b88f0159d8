import type { Json } from "../core/json.js";
import type { CallTarget } from "../core/eval.js";
import type {
  ModelTool,
  ProviderName,
  ReplyParts,
  ReplyTokens,
  ToolChoice,
} from "../core/model-types.js";
import { isLanguageModel } from "../core/language-model.js";
import type { LanguageModelLike } from "../core/language-model.js";
import type { RateGate } from "../core/rate-limits.js";
import { declaredSecret, type Secret } from "../core/secrets.js";
import { defaultBackoff } from "./backoff.js";
import type { Backoff } from "./backoff.js";
import { bareModel, providerOf } from "./model-name.js";
import { openai } from "./openai-provider.js";
import type { ChatMessage, Provider } from "./provider.js";
import { httpTarget } from "./http-post.js";
import { headersCredential } from "./headers-credential.js";
import { Failure, postWithRetries, redactUrl } from "./retrying-post.js";
import { SolverError } from "./solver-error.js";

export type { ChatMessage } from "./provider.js";
export { Failure, redactUrl } from "./retrying-post.js";
export { safeJson } from "./openai-provider.js";

/** Where and how to reach a model's endpoint. */
export interface ChatEndpoint {
  /**
   * The wire format, when the model id's prefix does not say it (`anthropic:…` is Anthropic's
   * Messages API; anything else the OpenAI-compatible format).
   */
  provider?: ProviderName;
  /**
   * Defaults to the provider's env (OPENAI_BASE_URL, ANTHROPIC_BASE_URL), else its default
   * (https://api.openai.com/v1, https://api.anthropic.com).
   */
  baseURL?: string;
  /**
   * Defaults to the provider's env (OPENAI_API_KEY, ANTHROPIC_API_KEY); sent only to that
   * provider's endpoint, and no credential header when neither is set.
   */
  apiKey?: string;
  /** Extra request headers (they override the defaults). */
  headers?: Record<string, string>;
  /** Per HTTP request, in milliseconds. Default 300 000. */
  timeoutMs?: number;
  /**
   * Retries after the first request on 429, 5xx, dropped connections and timeouts. Default 5.
   * A refused connection, an unknown host and 401/403/404 are never retried: no wait fixes them.
   */
  maxRetries?: number;
  backoff?: Partial<Backoff>;
}

export interface ChatRequest extends ChatEndpoint {
  /**
   * A model id; its `provider:` prefix picks the provider (see ChatEndpoint.provider) and is
   * dropped. Or an AI SDK language model: its provider package sends the call (the endpoint
   * options do not apply; retries do).
   */
  model: string | LanguageModelLike;
  messages: ChatMessage[];
  tools?: ModelTool[];
  toolChoice?: ToolChoice;
  temperature?: number;
  maxTokens?: number;
  /** Extra request-body fields (seed, top_p, response_format, …). */
  params?: Record<string, Json>;
  signal?: AbortSignal;
  /**
   * Called each time a request is re-sent after a retryable failure, right before it goes out:
   * how an attempt counts its retries (pass `ctx.onRetry`).
   */
  onRetry?: (() => void) | undefined;
  /**
   * The run's rate limits (pass `ctx.rateGate`): each request waits for its endpoint's budget,
   * and a 429 while the endpoint makes progress waits for it again without spending a retry.
   */
  rateGate?: RateGate | undefined;
}

/** A reply: text, tool calls, finish reason, reasoning and message (see ReplyParts). */
export interface ChatCompletion extends ReplyParts {
  /** The model id sent to the endpoint. */
  model: string;
  usage?: ReplyTokens;
  /** HTTP requests made, retries included. */
  requests: number;
}

export const DEFAULT_BASE_URL = openai.defaultBaseURL;

/**
 * Resolves the endpoint of a request: the explicit values, else the provider's environment
 * variables (OPENAI_BASE_URL, OPENAI_API_KEY), else its default base URL.
 *
 * @example resolveEndpoint({}).apiKeyEnv // "OPENAI_API_KEY"
 */
export function resolveEndpoint<KeyEnv extends string = "OPENAI_API_KEY">(
  endpoint: ChatEndpoint,
  provider: Provider<KeyEnv> = openai as unknown as Provider<KeyEnv>,
): { baseURL: string; apiKey: string | undefined; apiKeyEnv: KeyEnv | "explicit" } {
  const baseURL = (
    endpoint.baseURL ??
    process.env[provider.baseUrlEnv] ??
    provider.defaultBaseURL
  ).replace(/\/+$/, "");
  if (endpoint.apiKey !== undefined)
    return { baseURL, apiKey: endpoint.apiKey, apiKeyEnv: "explicit" };
  const apiKey = process.env[provider.apiKeyEnv] || undefined;
  return { baseURL, apiKey, apiKeyEnv: provider.apiKeyEnv };
}

/**
 * Where a call to `provider` goes and with what credential (the key and header values, as text
 * the engine only ever hashes with the store's salt): what the reply cache keys a call by.
 *
 * @example callTarget({ apiKey: "sk-1" }, openai).baseURL // "https://api.openai.com/v1"
 */
export function callTarget(endpoint: ChatEndpoint, provider: Provider<string>): CallTarget {
  const { baseURL, apiKey } = resolveEndpoint(endpoint, provider);
  return { provider: provider.name, baseURL, credential: credentialText(apiKey, endpoint.headers) };
}

/**
 * A call's credential as text (its key and header values), for the engine to hash: the reply
 * cache's. Not `headersCredential` (the rate limits'): stored cache entries are keyed by this
 * text's hash, and another text would miss every one of them.
 */
function credentialText(
  apiKey: string | undefined,
  headers: Record<string, string> | undefined,
): string {
  return JSON.stringify([apiKey ?? null, Object.entries(headers ?? {}).sort()]);
}

/**
 * One chat call: the model's provider (`openai`'s `/chat/completions`, or `anthropic`'s
 * `/v1/messages`) builds the request and reads the reply, `postWithRetries` sends it (retries,
 * backoff, Retry-After, abort, `onRetry`, configuration faults; see there). Errors name the
 * endpoint and status, never the key.
 *
 * @example
 * const reply = await chatCompletion({ model: "gpt-4o-mini", messages: [{ role: "user", content: "2+2?" }] });
 * reply.content; // "4"
 */
export async function chatCompletion(request: ChatRequest): Promise<ChatCompletion> {
  if (isLanguageModel(request.model)) {
    // Loaded on the first AI SDK call: an eval that uses none loads none of it (start-up).
    const { languageModelCompletion } = await import("./ai-sdk-model.js");
    return languageModelCompletion(request.model, request);
  }
  const provider = providerOf(request.model, request.provider);
  const model = bareModel(request.model);
  const { path, body } = provider.chatRequest({
    model,
    messages: request.messages,
    tools: request.tools,
    toolChoice: request.toolChoice,
    temperature: request.temperature,
    maxTokens: request.maxTokens,
    params: request.params,
  });
  const { value, requests } = await postToEndpoint(
    { ...request, rateModel: model, maxTokens: request.maxTokens },
    path,
    body,
    `model ${model}`,
    (t, s) => provider.chatReply(t, s),
    provider,
  );
  return { ...value, model, requests };
}

/**
 * POSTs `body` to `path` under the endpoint's base URL with `provider`'s headers and the
 * caller's, through postWithRetries. For every call of a provider's format (chat, embeddings).
 *
 * @example await postToEndpoint({}, "/embeddings", { model, input }, "model m", parseEmbeddings)
 */
export async function postToEndpoint<T>(
  endpoint: ChatEndpoint & {
    signal?: AbortSignal | undefined;
    onRetry?: (() => void) | undefined;
    rateGate?: RateGate | undefined;
    /** The model the rate limits count the request under (default: the body's `model`). */
    rateModel?: string | undefined;
    maxTokens?: number | undefined;
  },
  path: string,
  body: Record<string, Json>,
  what: string,
  parse: (text: string, says: (text: string) => string) => T | Failure,
  provider: Provider = openai,
): Promise<{ value: T; requests: number }> {
  const { baseURL, apiKey } = resolveEndpoint(endpoint, provider);
  const url = `${baseURL}${path}`;
  if (httpTarget(url) === undefined) {
    const message = `POST ${redactUrl(url)} (${what}) failed: the base URL ${JSON.stringify(redactUrl(baseURL))} is not an http:// or https:// URL`;
    throw new SolverError("provider", message, {
      configuration: { cause: "invalid-url", url: redactUrl(url) },
    });
  }
  const headers = provider.headers(apiKey);
  for (const [name, value] of Object.entries(endpoint.headers ?? {})) {
    headers[name.toLowerCase()] = value;
  }
  const text = JSON.stringify(body);
  return postWithRetries({
    url,
    headers,
    body: text,
    what,
    timeoutMs: endpoint.timeoutMs ?? 300_000,
    maxRetries: endpoint.maxRetries ?? 5,
    backoff: { ...defaultBackoff, ...endpoint.backoff },
    signal: endpoint.signal,
    onRetry: endpoint.onRetry,
    secrets: apiKey ? [apiKey] : [],
    errorDetail: (text) => provider.errorDetail(text),
    parse,
    rate: endpoint.rateGate && {
      gate: endpoint.rateGate,
      endpoint: {
        provider: provider.name,
        model: endpoint.rateModel ?? String(body.model ?? ""),
        baseURL: redactUrl(baseURL),
        // A provider limits each key (or organisation header) on its own: the credential is
        // read from the headers sent, as an AI SDK model's is (one key, one budget).
        credential: headersCredential(headers),
      },
      tokens: estimatedTokens(text, endpoint.maxTokens),
      tokensOf: (value) => usedTokens(value),
    },
  });
}

/**
 * A request's tokens before it is sent, for the rate limits: its body's characters / 4 (the
 * prompt, with the JSON around it: an estimate above the prompt's tokens) and its `maxTokens`.
 *
 * @example estimatedTokens('{"messages":[]}', 100) // 104
 */
export function estimatedTokens(body: string, maxTokens: number | undefined): number {
  return Math.ceil(body.length / 4) + (maxTokens ?? 0);
}

/** The tokens a reply's usage says the request used (prompt and completion), if it says. */
function usedTokens(value: unknown): number | undefined {
  const usage = (value as { usage?: ReplyTokens } | null)?.usage;
  if (!usage) return undefined;
  return (usage.inputTokens ?? 0) + (usage.outputTokens ?? 0);
}

/**
 * The credentials requests to `endpoint` carry: the API key (explicit, or the provider's key
 * variable's value) and every extra header value, for the run to redact wherever an endpoint
 * echoes them.
 *
 * @example endpointSecrets({ apiKey: "sk-123456" }) // [{ name: "apiKey", value: "sk-123456" }]
 */
export function endpointSecrets(endpoint: ChatEndpoint, provider: Provider = openai): Secret[] {
  const { apiKey, apiKeyEnv } = resolveEndpoint(endpoint, provider);
  return [
    ...declaredSecret(apiKeyEnv === "explicit" ? "apiKey" : apiKeyEnv, apiKey),
    ...Object.entries(endpoint.headers ?? {}).flatMap(([name, value]) =>
      declaredSecret(`header ${name.toLowerCase()}`, value),
    ),
  ];
}
