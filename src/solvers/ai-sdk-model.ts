import type { LanguageModelGenerator } from "../core/eval.js";
import type { Json } from "../core/json.js";
import { generateResultJson, languageModelTokens, toJson } from "../core/language-model.js";
import type { LanguageModelCallOptions, LanguageModelLike } from "../core/language-model.js";
import type { ReplyTokens } from "../core/model-types.js";
import type { Usage } from "../core/types.js";
import { languageModelOptions, languageModelReply } from "./ai-sdk-messages.js";
import { abortReason, defaultBackoff, parseRetryAfter, retryDelayMs, sleep } from "./backoff.js";
import type { Backoff } from "./backoff.js";
import type { ChatCompletion, ChatRequest } from "./chat-completion.js";
import { costUsd } from "./prices.js";
import type { Price } from "./prices.js";
import { redactUrl } from "./retrying-post.js";
import { SolverError } from "./solver-error.js";

/** How a call to an AI SDK model is retried and told to the attempt. */
export interface RetryPolicy {
  signal?: AbortSignal | undefined;
  onRetry?: (() => void) | undefined;
  /** Retries after the first call on 429, 5xx and dropped connections. Default 5. */
  maxRetries?: number | undefined;
  backoff?: Partial<Backoff> | undefined;
}

/** Statuses no wait fixes: the key is wrong, may not use the model, or the model is unknown. */
const CONFIGURATION_STATUSES: ReadonlySet<number> = new Set([401, 403, 404]);

/**
 * Calls `run` (a model's doGenerate or doStream) with stet's retry policy, as the HTTP layer
 * retries its own requests: an APICallError-like failure with status 429 or 5xx, or one the AI
 * SDK marks retryable, is tried again after a backoff (its Retry-After honoured; `onRetry` told
 * of each re-send); 401/403/404 and a refused connection fail at once as configuration faults;
 * anything else fails as a provider error. A model's own `doGenerate` never retries (only the
 * AI SDK's `generateText` does, around it).
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
  for (let retry = 0; ; retry++) {
    if (retry > 0) policy.onRetry?.();
    try {
      return await run();
    } catch (thrown) {
      if (policy.signal?.aborted) throw abortReason(policy.signal);
      const failure = classify(thrown, what);
      if (!failure.retryable || retry >= maxRetries) {
        const tries = retry === 0 ? "" : ` after ${retry + 1} attempts`;
        throw new SolverError("provider", `${what} failed${tries}: ${failure.message}`, {
          ...failure.options,
          cause: thrown,
        });
      }
      await sleep(retryDelayMs(retry, backoff, failure.retryAfterMs), policy.signal);
    }
  }
}

interface Classified {
  retryable: boolean;
  message: string;
  retryAfterMs?: number | undefined;
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
  const headers = error.responseHeaders;
  const retryAfterMs =
    typeof headers === "object" && headers !== null
      ? parseRetryAfter(new Headers(headers as Record<string, string>))
      : undefined;
  const retryable =
    status === undefined
      ? error.isRetryable === true
      : status === 429 || status >= 500 || error.isRetryable === true;
  const said = status === undefined ? message : `HTTP ${status}: ${message}`;
  return {
    retryable,
    message: said,
    retryAfterMs,
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
    request,
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
    const result = await withModelRetries(model, () => model.doGenerate(call), context);
    const { usage } = (result ?? {}) as { usage?: unknown };
    return withUsage(model, generateResultJson(result), usage, context.prices);
  },
  async stream(model, options, context) {
    const doStream = model.doStream?.bind(model);
    if (!doStream) throw new Error(`${model.provider} model ${model.modelId} has no doStream`);
    const call = { ...options, abortSignal: context.signal };
    const result = await withModelRetries(model, () => doStream(call), context);
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
