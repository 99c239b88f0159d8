import * as z from "zod";
import type { Json } from "../core/json.js";
import { declaredSecret, type Secret } from "../core/secrets.js";
import type { ConfigurationFault } from "../core/types.js";
import { abortReason, defaultBackoff, parseRetryAfter, retryDelayMs, sleep } from "./backoff.js";
import type { Backoff } from "./backoff.js";
import { httpPost } from "./http-post.js";
import { bareModel } from "./model-name.js";
import { SolverError } from "./solver-error.js";
import type { SolverErrorType } from "./solver-error.js";

/** One chat message; extra members (name, tool_call_id, …) are passed through. */
export type ChatMessage = { role: string; content: Json } & { [key: string]: Json };

/** Where and how to reach an OpenAI-compatible endpoint. */
export interface ChatEndpoint {
  /** Defaults to env OPENAI_BASE_URL, else https://api.openai.com/v1. */
  baseURL?: string;
  /** Defaults to env OPENAI_API_KEY; no Authorization header when neither is set. */
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
  /** A model id; a `provider:` prefix such as `openai:` is dropped. */
  model: string;
  messages: ChatMessage[];
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
}

export interface ChatCompletion {
  /** The assistant's text ("" when the reply had no content). */
  content: string;
  /** The model id sent to the endpoint. */
  model: string;
  usage?: { inputTokens: number; outputTokens: number };
  /** HTTP requests made, retries included. */
  requests: number;
}

export const DEFAULT_BASE_URL = "https://api.openai.com/v1";

const responseSchema = z.object({
  choices: z
    .array(z.object({ message: z.object({ content: z.string().nullish() }).loose() }).loose())
    .min(1),
  usage: z
    .object({
      prompt_tokens: z.number().nonnegative(),
      completion_tokens: z.number().nonnegative(),
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
 * A failed request or an unusable reply: retried when `type` and `status` say so, never when
 * `fault` says the endpoint as configured cannot serve any request.
 */
export class Failure {
  constructor(
    readonly type: SolverErrorType,
    readonly message: string,
    readonly status?: number,
    readonly retryAfterMs?: number,
    readonly fault?: ConfigurationFault["cause"],
  ) {}
}

/**
 * Statuses that say the same to every request of a run: the key is wrong (401), it may not use
 * this model or endpoint (403), the model or the path does not exist (404).
 */
const CONFIGURATION_STATUSES: ReadonlySet<number> = new Set([401, 403, 404]);

/**
 * Resolves the endpoint of a request: the explicit values, else the environment.
 *
 * @example resolveEndpoint({}).apiKeyEnv // "OPENAI_API_KEY"
 */
export function resolveEndpoint(endpoint: ChatEndpoint): {
  baseURL: string;
  apiKey: string | undefined;
  apiKeyEnv: "OPENAI_API_KEY" | "explicit";
} {
  const baseURL = (endpoint.baseURL ?? process.env.OPENAI_BASE_URL ?? DEFAULT_BASE_URL).replace(
    /\/+$/,
    "",
  );
  if (endpoint.apiKey !== undefined)
    return { baseURL, apiKey: endpoint.apiKey, apiKeyEnv: "explicit" };
  return { baseURL, apiKey: process.env.OPENAI_API_KEY || undefined, apiKeyEnv: "OPENAI_API_KEY" };
}

/**
 * One chat completion against an OpenAI-compatible `/chat/completions` endpoint, retried with
 * exponential backoff and full jitter on 429, 5xx, dropped connections and per-request timeouts
 * (honouring Retry-After); `onRetry` is told of each re-send, including those of a call that
 * fails in the end. Aborting `signal` rejects at once with its reason, also mid-backoff.
 * Exhausted retries or a non-retryable status throw a SolverError that names the endpoint
 * and status, never the key. A refused connection, an unknown host and 401/403/404 fail at once
 * with `configuration` set on the SolverError (see ConfigurationFault).
 *
 * @example
 * const reply = await chatCompletion({ model: "gpt-4o-mini", messages: [{ role: "user", content: "2+2?" }] });
 * reply.content; // "4"
 */
export async function chatCompletion(request: ChatRequest): Promise<ChatCompletion> {
  const model = bareModel(request.model);
  const { value, requests } = await postWithRetries(
    request,
    "/chat/completions",
    requestBody(model, request),
    `model ${model}`,
    parseCompletion,
  );
  return { ...value, model, requests };
}

/**
 * POSTs `body` to `path` under the endpoint's base URL and parses the reply, retrying as
 * chatCompletion documents. For every OpenAI-compatible call (chat, embeddings).
 *
 * @example await postWithRetries({}, "/embeddings", { model, input }, "model m", parseEmbeddings)
 */
export async function postWithRetries<T>(
  endpoint: ChatEndpoint & {
    signal?: AbortSignal | undefined;
    onRetry?: (() => void) | undefined;
  },
  path: string,
  body: Record<string, Json>,
  what: string,
  parse: (text: string, apiKey: string | undefined) => T | Failure,
): Promise<{ value: T; requests: number }> {
  const { baseURL, apiKey } = resolveEndpoint(endpoint);
  const url = `${baseURL}${path}`;
  const maxRetries = endpoint.maxRetries ?? 5;
  const backoff = { ...defaultBackoff, ...endpoint.backoff };
  const init = { headers: requestHeaders(apiKey, endpoint.headers), body: JSON.stringify(body) };
  const where = `POST ${redactUrl(url)} (${what})`;
  if (!isHttpUrl(url)) {
    const message = `${where} failed: the base URL ${JSON.stringify(redactUrl(baseURL))} is not an http:// or https:// URL`;
    throw new SolverError("provider", message, {
      configuration: { cause: "invalid-url", url: redactUrl(url) },
    });
  }
  for (let retry = 0; ; retry++) {
    if (retry > 0) endpoint.onRetry?.();
    const result = await attempt(
      url,
      init,
      endpoint.timeoutMs ?? 300_000,
      endpoint.signal,
      apiKey,
      parse,
    );
    if (!(result instanceof Failure)) return { value: result, requests: retry + 1 };
    const retryable =
      result.fault === undefined && (result.type === "timeout" || isRetryableStatus(result.status));
    if (!retryable || retry >= maxRetries) {
      const tries = retry + 1 === 1 ? "" : ` after ${retry + 1} attempts`;
      const status = result.status === undefined ? {} : { status: result.status };
      throw new SolverError(result.type, `${where} failed${tries}: ${result.message}`, {
        ...status,
        ...(result.fault === undefined
          ? {}
          : { configuration: { cause: result.fault, url: redactUrl(url), ...status } }),
      });
    }
    await sleep(retryDelayMs(retry, backoff, result.retryAfterMs), endpoint.signal);
  }
}

function isHttpUrl(url: string): boolean {
  try {
    const { protocol } = new URL(url);
    return protocol === "http:" || protocol === "https:";
  } catch {
    return false;
  }
}

async function attempt<T>(
  url: string,
  init: { headers: Record<string, string>; body: string },
  timeoutMs: number,
  signal: AbortSignal | undefined,
  apiKey: string | undefined,
  parse: (text: string, apiKey: string | undefined) => T | Failure,
): Promise<T | Failure> {
  if (signal?.aborted) throw abortReason(signal);
  const controller = new AbortController();
  const onAbort = (): void => controller.abort(signal?.reason);
  signal?.addEventListener("abort", onAbort, { once: true });
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    controller.abort();
  }, timeoutMs);
  try {
    const response = await httpPost(url, init.headers, init.body, controller.signal);
    const text = response.text;
    if (!response.ok) {
      const retryAfterMs = parseRetryAfter(response.headers);
      return new Failure(
        "provider",
        `HTTP ${response.status}${serverSays(text, apiKey)}`,
        response.status,
        retryAfterMs,
        CONFIGURATION_STATUSES.has(response.status) ? "http-status" : undefined,
      );
    }
    return parse(text, apiKey);
  } catch (error) {
    if (signal?.aborted) throw abortReason(signal);
    if (timedOut) return new Failure("timeout", `no response within ${timeoutMs} ms`);
    return networkFailure(error, url);
  } finally {
    clearTimeout(timer);
    signal?.removeEventListener("abort", onAbort);
  }
}

function parseCompletion(
  text: string,
  apiKey: string | undefined,
): Omit<ChatCompletion, "model" | "requests"> | Failure {
  const json = safeJson(text);
  const parsed = responseSchema.safeParse(json);
  if (parsed.success) {
    const { choices, usage } = parsed.data;
    return {
      content: choices[0]?.message.content ?? "",
      ...(usage == null
        ? {}
        : { usage: { inputTokens: usage.prompt_tokens, outputTokens: usage.completion_tokens } }),
    };
  }
  // Some gateways (OpenRouter) report upstream failures as a 200 whose body is an error.
  const failure = errorBodySchema.safeParse(json);
  if (failure.success && typeof failure.data.error === "object") {
    const code = failure.data.error.code;
    return new Failure(
      "provider",
      `error in response body${serverSays(text, apiKey)}`,
      typeof code === "number" ? code : 200,
    );
  }
  return new Failure("provider", "malformed chat completion response", 200);
}

/**
 * The credentials requests to `endpoint` carry: the API key (explicit, or OPENAI_API_KEY's value)
 * and every extra header value, for the run to redact wherever an endpoint echoes them.
 *
 * @example endpointSecrets({ apiKey: "sk-123456" }) // [{ name: "apiKey", value: "sk-123456" }]
 */
export function endpointSecrets(endpoint: ChatEndpoint): Secret[] {
  const { apiKey, apiKeyEnv } = resolveEndpoint(endpoint);
  return [
    ...declaredSecret(apiKeyEnv === "explicit" ? "apiKey" : apiKeyEnv, apiKey),
    ...Object.entries(endpoint.headers ?? {}).flatMap(([name, value]) =>
      declaredSecret(`header ${name.toLowerCase()}`, value),
    ),
  ];
}

function requestHeaders(
  apiKey: string | undefined,
  extra: Record<string, string> = {},
): Record<string, string> {
  const headers: Record<string, string> = { "content-type": "application/json" };
  if (apiKey) headers.authorization = `Bearer ${apiKey}`;
  for (const [name, value] of Object.entries(extra)) headers[name.toLowerCase()] = value;
  return headers;
}

function requestBody(model: string, request: ChatRequest): Record<string, Json> {
  // OpenAI's reasoning models reject max_tokens; most other servers only know max_tokens.
  const maxTokensField = /^(o\d|gpt-5)/.test(model) ? "max_completion_tokens" : "max_tokens";
  return {
    model,
    messages: request.messages,
    ...(request.temperature === undefined ? {} : { temperature: request.temperature }),
    ...(request.maxTokens === undefined ? {} : { [maxTokensField]: request.maxTokens }),
    ...request.params,
  };
}

function isRetryableStatus(status: number | undefined): boolean {
  return status === undefined || status === 429 || status >= 500;
}

function serverSays(text: string, apiKey: string | undefined): string {
  const body = errorBodySchema.safeParse(safeJson(text));
  const error = body.success ? body.data.error : undefined;
  let detail = typeof error === "string" ? error : (error?.message ?? text);
  detail = detail.replace(/\s+/g, " ").trim().slice(0, 300);
  if (apiKey) detail = detail.replaceAll(apiKey, "***");
  return detail === "" ? "" : `: ${detail}`;
}

/** The JSON in `text`, or undefined when it is not JSON. */
export function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/**
 * A request that got no response. Nothing listening (ECONNREFUSED) and a host that does not
 * resolve (ENOTFOUND, EAI_AGAIN) are configuration faults: the OS answers them at once, so
 * retrying only multiplies the wait. A reset or dropped connection stays retryable.
 */
function networkFailure(error: unknown, url: string): Failure {
  const code = errnoCode(error);
  const cause = networkCause(error);
  if (code === "ECONNREFUSED") {
    return new Failure(
      "provider",
      `connection refused (${cause})`,
      undefined,
      undefined,
      "connection-refused",
    );
  }
  if (code === "ENOTFOUND" || code === "EAI_AGAIN") {
    const host = new URL(url).hostname;
    return new Failure(
      "provider",
      `host not found: ${host} (${cause})`,
      undefined,
      undefined,
      "host-not-found",
    );
  }
  return new Failure("provider", `network error: ${cause}`);
}

/** The errno code of a failed connect, also when every address of a host failed alike. */
function errnoCode(error: unknown): string | undefined {
  const { code, errors } = (error ?? {}) as { code?: unknown; errors?: unknown };
  if (typeof code === "string") return code;
  if (!Array.isArray(errors) || errors.length === 0) return undefined;
  const codes = new Set(errors.map(errnoCode));
  return codes.size === 1 ? [...codes][0] : undefined;
}

function networkCause(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const cause = error.cause instanceof Error ? error.cause.message : undefined;
  return cause === undefined ? error.message : `${error.message} (${cause})`;
}

/**
 * A URL without user info, for messages and recorded configuration.
 *
 * @example redactUrl("https://u:secret@host/v1") // "https://***@host/v1"
 */
export function redactUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.username === "" && parsed.password === "") return url;
    parsed.username = "***";
    parsed.password = "";
    return parsed.toString();
  } catch {
    return url;
  }
}
