import type { LanguageModelGenerator } from "../core/eval.js";
import type { Json } from "../core/json.js";
import { generateResultJson, languageModelTokens, toJson } from "../core/language-model.js";
import type { LanguageModelCallOptions, LanguageModelLike } from "../core/language-model.js";
import type { ReplyTokens } from "../core/model-types.js";
import type { Usage } from "../core/types.js";
import type { RateGate } from "../core/rate-limits.js";
import { languageModelEndpoint } from "./ai-sdk-endpoint.js";
import { languageModelOptions, languageModelReply } from "./ai-sdk-messages.js";
import { abortReason, defaultBackoff, parseRetryAfter, retryDelayMs, sleep } from "./backoff.js";
import type { Backoff } from "./backoff.js";
import { estimatedTokens, type ChatCompletion, type ChatRequest } from "./chat-completion.js";
import { costUsd } from "./prices.js";
import type { Price } from "./prices.js";
import { redactUrl } from "./retrying-post.js";
import { SolverError } from "./solver-error.js";

/** How a call to an AI SDK model is retried, rate-limited and told to the attempt. */
export interface RetryPolicy {
  signal?: AbortSignal | undefined;
  onRetry?: (() => void) | undefined;
  /** Retries after the first call on 429, 5xx and dropped connections. Default 5. */
  maxRetries?: number | undefined;
  backoff?: Partial<Backoff> | undefined;
  /** The run's rate limits: each call waits for its endpoint's budget (see RateGate). */
  rateGate?: RateGate | undefined;
  /** The call's tokens estimated before it is sent (its prompt's characters / 4 and its maximum output). */
  estimatedTokens?: number | undefined;
}

/** A call's 429s that wait outside its retries while its endpoint makes progress, at most. */
const MAX_THROTTLED = 100;

/** Statuses no wait fixes: the key is wrong, may not use the model, or the model is unknown. */
const CONFIGURATION_STATUSES: ReadonlySet<number> = new Set([401, 403, 404]);

/**
 * Calls `run` (a model's doGenerate or doStream) with stet's retry policy, as the HTTP layer
 * retries its own requests: an APICallError-like failure with status 429 or 5xx, or one the AI
 * SDK marks retryable, is tried again after a backoff (its Retry-After honoured; `onRetry` told
 * of each re-send); 401/403/404 and a refused connection fail at once as configuration faults;
 * anything else fails as a provider error. A model's own `doGenerate` never retries (only the
 * AI SDK's `generateText` does, around it). With a `rateGate`, each call waits for its
 * endpoint's budget (`languageModelEndpoint`) and settles it with the response's status,
 * headers and usage; a 429 or 529 while the endpoint makes progress waits and goes again
 * without spending a retry, as a request of stet's own providers does (`postWithRetries`).
 *
 * @example await withModelRetries(model, () => model.doGenerate(options), { signal });
 */
export async function withModelRetries<T>(
  model: LanguageModelLike,
  run: () => PromiseLike<T>,
  policy: RetryPolicy,
): Promise<T> {
  const backoff = { ...defaultBackoff, ...policy.backoff };
  const maxRetries = policy.maxRetries ?? 5;
  const what = `${model.provider} model ${model.modelId}`;
  const gate = policy.rateGate;
  const endpoint = gate && (await languageModelEndpoint(model));
  let retry = 0;
  let throttles = 0;
  for (let sent = 0; ; sent++) {
    if (sent > 0) policy.onRetry?.();
    const permit =
      endpoint && (await gate.acquire(endpoint, policy.estimatedTokens ?? 0, policy.signal));
    let failure: Classified;
    try {
      const result = await run();
      permit?.settle({ status: 200, headers: headersOf(result), tokens: usedTokens(result) });
      return result;
    } catch (thrown) {
      if (policy.signal?.aborted) {
        permit?.settle({ status: 0 });
        throw abortReason(policy.signal);
      }
      failure = classify(thrown, what);
      const status = failure.options?.status ?? 0;
      permit?.settle({ status, headers: failure.headers });
      if (
        (status === 429 || status === 529) &&
        permit?.progressing() &&
        throttles < MAX_THROTTLED
      ) {
        const delay = retryDelayMs(Math.min(throttles, 6), backoff, failure.retryAfterMs);
        throttles++;
        await sleep(delay, policy.signal);
        continue;
      }
      if (!failure.retryable || retry >= maxRetries) {
        const tries = sent === 0 ? "" : ` after ${sent + 1} attempts`;
        throw new SolverError("provider", `${what} failed${tries}: ${failure.message}`, {
          ...failure.options,
          cause: thrown,
        });
      }
    }
    await sleep(retryDelayMs(retry, backoff, failure.retryAfterMs), policy.signal);
    retry++;
  }
}

/**
 * A call's tokens before it is sent, for the rate limits: its prompt and tools as JSON / 4 (as
 * a request of stet's own providers is estimated) and its `maxOutputTokens`.
 *
 * @example callTokens({ prompt: [], maxOutputTokens: 100 }) // 101
 */
export function callTokens(options: LanguageModelCallOptions): number {
  const text = JSON.stringify([options.prompt, options.tools ?? null]);
  const most = options.maxOutputTokens;
  return estimatedTokens(text, typeof most === "number" ? most : undefined);
}

/** A result's response headers (`response.headers`; `rawResponse.headers` in specification v1). */
function headersOf(result: unknown): Pick<Headers, "get"> | undefined {
  const { response, rawResponse } = (result ?? {}) as {
    response?: { headers?: unknown };
    rawResponse?: { headers?: unknown };
  };
  return toHeaders(response?.headers ?? rawResponse?.headers);
}

function toHeaders(record: unknown): Pick<Headers, "get"> | undefined {
  if (typeof record !== "object" || record === null) return undefined;
  try {
    return new Headers(record as Record<string, string>);
  } catch {
    return undefined;
  }
}

/** The tokens a result's usage says the call used (a stream's come at its end: unknown here). */
function usedTokens(result: unknown): number | undefined {
  const tokens = languageModelTokens((result as { usage?: unknown } | null)?.usage);
  return tokens && tokens.inputTokens + tokens.outputTokens;
}

interface Classified {
  retryable: boolean;
  message: string;
  retryAfterMs?: number | undefined;
  /** The error response's headers (rate-limit headers, retry-after). */
  headers?: Pick<Headers, "get"> | undefined;
  options: ConstructorParameters<typeof SolverError>[2];
}

function classify(thrown: unknown, what: string): Classified {
  const error = (typeof thrown === "object" && thrown !== null ? thrown : {}) as {
    message?: unknown;
    statusCode?: unknown;
    isRetryable?: unknown;
    url?: unknown;
    responseHeaders?: unknown;
  };
  const message = typeof error.message === "string" ? error.message : String(thrown);
  const url = typeof error.url === "string" ? redactUrl(error.url) : what;
  const status = typeof error.statusCode === "number" ? error.statusCode : undefined;
  if (status !== undefined && CONFIGURATION_STATUSES.has(status)) {
    const configuration = { cause: "http-status" as const, url, status };
    return {
      retryable: false,
      message: `HTTP ${status}: ${message}`,
      options: { status, configuration },
    };
  }
  if (errnoOf(thrown) === "ECONNREFUSED") {
    const configuration = { cause: "connection-refused" as const, url };
    return { retryable: false, message, options: { configuration } };
  }
  const headers = toHeaders(error.responseHeaders);
  const retryAfterMs = headers && parseRetryAfter(headers);
  const retryable =
    status === undefined
      ? error.isRetryable === true
      : status === 429 || status >= 500 || error.isRetryable === true;
  const said = status === undefined ? message : `HTTP ${status}: ${message}`;
  return {
    retryable,
    message: said,
    retryAfterMs,
    headers,
    options: status === undefined ? {} : { status },
  };
}

/** The errno code somewhere in an error's cause chain (a fetch failure wraps it). */
function errnoOf(error: unknown, depth = 0): string | undefined {
  if (depth > 4 || typeof error !== "object" || error === null) return undefined;
  const { code, cause } = error as { code?: unknown; cause?: unknown };
  return typeof code === "string" ? code : errnoOf(cause, depth + 1);
}

/**
 * One chat call to an AI SDK model (`chatCompletion` with a LanguageModel as its model): the
 * canonical call as the model's call options, `doGenerate` with stet's retries, the result as a
 * canonical reply. The model's provider package holds its credentials and endpoint; stet's
 * endpoint options (baseURL, apiKey, headers) do not apply.
 *
 * @example await languageModelCompletion(openai.chat("gpt-4o-mini"), { model, messages })
 */
export async function languageModelCompletion(
  model: LanguageModelLike,
  request: Omit<ChatRequest, "model">,
): Promise<ChatCompletion> {
  const options = languageModelOptions(model.specificationVersion, request, request.signal);
  let requests = 0;
  const result = await withModelRetries(
    model,
    () => {
      requests++;
      return model.doGenerate(options);
    },
    { ...request, estimatedTokens: callTokens(options) },
  );
  return { ...languageModelReply(result), model: model.modelId, requests };
}

/**
 * Usage of a call to an AI SDK model, priced by its model id (the built-in table, or `prices`).
 *
 * @example pricedUsage("gpt-4o-mini", { inputTokens: 10, outputTokens: 2 })
 */
export function pricedUsage(modelId: string, tokens: ReplyTokens, prices?: Price): Usage {
  const cost = costUsd(modelId, tokens, prices);
  return cost === undefined ? { ...tokens } : { ...tokens, costUsd: cost };
}

/**
 * What `ctx.languageModel` calls for a wrapped model: `doGenerate` or `doStream` with stet's
 * retries, the result as JSON for the journal and its usage priced. A stream is read to its end
 * (its parts are what the journal records and replays).
 */
export const generateLanguageModel: LanguageModelGenerator = {
  async generate(model, options, context) {
    // The attempt's signal (with the caller's) aborts the request itself.
    const call = { ...options, abortSignal: context.signal };
    const policy = { ...context, estimatedTokens: callTokens(options) };
    const result = await withModelRetries(model, () => model.doGenerate(call), policy);
    const { usage } = (result ?? {}) as { usage?: unknown };
    return withUsage(model, generateResultJson(result), usage, context.prices);
  },
  async stream(model, options, context) {
    const doStream = model.doStream?.bind(model);
    if (!doStream) throw new Error(`${model.provider} model ${model.modelId} has no doStream`);
    const call = { ...options, abortSignal: context.signal };
    const policy = { ...context, estimatedTokens: callTokens(options) };
    const result = await withModelRetries(model, () => doStream(call), policy);
    const parts = await readAll((result as { stream?: unknown }).stream);
    const failed = parts.find((part) => part.type === "error");
    // A failed stream is not journaled: a resume asks again.
    if (failed)
      throw new SolverError(
        "provider",
        `${model.provider} model ${model.modelId} failed: ${errorText(failed.error)}`,
      );
    const finish = parts.find((part) => part.type === "finish");
    return withUsage(model, { parts: parts.map(toJson) }, finish?.usage, context.prices);
  },
};

function errorText(error: unknown): string {
  return error instanceof Error ? error.message : JSON.stringify(toJson(error));
}

function withUsage(
  model: LanguageModelLike,
  result: Json,
  usage: unknown,
  prices: Price | undefined,
): { result: Json; usage?: Usage } {
  const tokens = languageModelTokens(usage);
  return tokens === undefined
    ? { result }
    : { result, usage: pricedUsage(model.modelId, tokens, prices) };
}

async function readAll(stream: unknown): Promise<Record<string, unknown>[]> {
  if (!(stream instanceof ReadableStream)) throw new Error("doStream returned no stream");
  const parts: Record<string, unknown>[] = [];
  const reader = (stream as ReadableStream<Record<string, unknown>>).getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return parts;
    parts.push(value);
  }
}

export type { LanguageModelCallOptions };
