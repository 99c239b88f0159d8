import type { RateEndpoint, RateGate, RatePermit } from "../core/rate-limits.js";
import type { ConfigurationFault } from "../core/types.js";
import { abortReason, parseRetryAfter, retryDelayMs, sleep } from "./backoff.js";
import type { Backoff } from "./backoff.js";
import { watchAbort } from "../core/abort-watch.js";
import { deadline } from "./deadlines.js";
import { httpPost, type RequestHandle } from "./http-post.js";
import { SolverError } from "./solver-error.js";
import type { SolverErrorType } from "./solver-error.js";

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

/** A POST whose URL and headers are resolved: the wire format has already been applied. */
export interface ResolvedPost<T> {
  url: string;
  headers: Record<string, string>;
  body: string;
  /** What the request is for in messages, e.g. "model gpt-4o-mini". */
  what: string;
  timeoutMs: number;
  /** Retries after the first request. */
  maxRetries: number;
  backoff: Backoff;
  signal?: AbortSignal | undefined;
  /** Told of each re-sent request, right before it goes out. */
  onRetry?: (() => void) | undefined;
  /** Values blanked ("***") in what a server says back (the API key). */
  secrets: readonly string[];
  /** The server's own words in an error body (the wire format's error shape), "" for none. */
  errorDetail: (text: string) => string;
  /** A 2xx body as the caller's value, or a Failure; `says` is errorDetail, redacted, as ": …". */
  parse: (text: string, says: (text: string) => string) => T | Failure;
  /** The run's rate limits: each request waits for its endpoint's budget (see RateGate). */
  rate?: RatedPost<T> | undefined;
}

/** Where a request goes for the rate limits, its estimated tokens, and the tokens a reply used. */
export interface RatedPost<T> {
  gate: RateGate;
  endpoint: RateEndpoint;
  /** Estimated before sending: the body's characters / 4 and its maximum output tokens. */
  tokens: number;
  tokensOf?: (value: T) => number | undefined;
}

/**
 * Statuses that say the same to every request of a run: the key is wrong (401), it may not use
 * this model or endpoint (403), the model or the path does not exist (404).
 */
/** A call's 429s that wait outside its retries while its endpoint makes progress, at most. */
const MAX_THROTTLED = 100;

const CONFIGURATION_STATUSES: ReadonlySet<number> = new Set([401, 403, 404]);

/**
 * POSTs a resolved request through the keep-alive client, retried with exponential backoff and
 * full jitter on 429, 5xx, dropped connections and per-request timeouts (honouring Retry-After);
 * `onRetry` is told of each re-send, including those of a call that fails in the end. Aborting
 * `signal` rejects at once with its reason, also mid-backoff. Exhausted retries or a
 * non-retryable failure throw a SolverError that names the URL (without credentials) and status,
 * never a secret. A refused connection, an unknown host and 401/403/404 fail at once with
 * `configuration` set on the SolverError (see ConfigurationFault).
 *
 * @example const { value, requests } = await postWithRetries({ url, headers, body, what: "model m", … });
 */
export async function postWithRetries<T>(
  post: ResolvedPost<T>,
): Promise<{ value: T; requests: number }> {
  let retry = 0;
  let throttles = 0;
  for (let sent = 0; ; sent++) {
    if (sent > 0) post.onRetry?.();
    const rate = post.rate;
    const held = rate && (await heldPermit(rate, post.signal));
    const { result, headers } = await attempt(post, held?.beforeWrite).catch((error: unknown) => {
      held?.permit().settle({ status: 0 });
      throw error;
    });
    const permit = held?.permit();
    const status = result instanceof Failure ? (result.status ?? 0) : 200;
    const tokens = result instanceof Failure ? undefined : rate?.tokensOf?.(result);
    permit?.settle({ status, headers, tokens });
    if (!(result instanceof Failure)) return { value: result, requests: sent + 1 };
    // Throttled while the endpoint makes progress (another request succeeded since this one was
    // sent): the gate paused the endpoint until its budget is back, and the call's retries are
    // not spent on it (up to MAX_THROTTLED re-sends, so one request refused for ever still ends).
    if ((status === 429 || status === 529) && permit?.progressing() && throttles < MAX_THROTTLED) {
      const delay = retryDelayMs(Math.min(throttles, 6), post.backoff, result.retryAfterMs);
      throttles++;
      await sleep(delay, post.signal);
      continue;
    }
    if (!isRetryable(result) || retry >= post.maxRetries) {
      const tries = sent + 1 === 1 ? "" : ` after ${sent + 1} attempts`;
      const status = result.status === undefined ? {} : { status: result.status };
      const where = `POST ${redactUrl(post.url)} (${post.what})`;
      throw new SolverError(result.type, `${where} failed${tries}: ${result.message}`, {
        ...status,
        ...(result.fault === undefined
          ? {}
          : { configuration: { cause: result.fault, url: redactUrl(post.url), ...status } }),
      });
    }
    await sleep(retryDelayMs(retry, post.backoff, result.retryAfterMs), post.signal);
    retry++;
  }
}

/**
 * A request's permit from its endpoint's gate, checked again right before the request is written
 * (`beforeWrite`): one that lapsed meanwhile (RatePermit.lapsed: a new connection's write waits a
 * turn of the event loop, which took up to a second on a loaded machine) is given back and the
 * request waits for a new one, so that what reaches the provider was spent within its lease.
 */
async function heldPermit<T>(
  rate: RatedPost<T>,
  signal: AbortSignal | undefined,
): Promise<{ permit: () => RatePermit; beforeWrite: () => Promise<void> | undefined }> {
  let permit = await rate.gate.acquire(rate.endpoint, rate.tokens, signal);
  const renew = async (): Promise<void> => {
    while (permit.lapsed()) {
      permit.withdraw();
      permit = await rate.gate.acquire(rate.endpoint, rate.tokens, signal);
    }
  };
  return { permit: () => permit, beforeWrite: () => (permit.lapsed() ? renew() : undefined) };
}

/**
 * Whether a failed request is worth sending again: a timeout, a dropped connection, 429 or 5xx,
 * and never a configuration fault (no wait fixes those).
 *
 * @example isRetryable(httpFailure(503, undefined, "")) // true
 */
export function isRetryable(failure: Failure): boolean {
  if (failure.fault !== undefined) return false;
  const { status } = failure;
  return failure.type === "timeout" || status === undefined || status === 429 || status >= 500;
}

/**
 * The Failure of a non-2xx response; 401/403/404 are configuration faults.
 *
 * @example httpFailure(401, undefined, ": bad key").fault // "http-status"
 */
export function httpFailure(
  status: number,
  retryAfterMs: number | undefined,
  says: string,
): Failure {
  return new Failure(
    "provider",
    `HTTP ${status}${says}`,
    status,
    retryAfterMs,
    CONFIGURATION_STATUSES.has(status) ? "http-status" : undefined,
  );
}

async function attempt<T>(
  post: ResolvedPost<T>,
  beforeWrite?: () => Promise<void> | undefined,
): Promise<{ result: T | Failure; headers?: Pick<Headers, "get"> }> {
  const { signal, timeoutMs } = post;
  if (signal?.aborted) throw abortReason(signal);
  // No AbortController, listener and timer of its own: the request is ended through its handle,
  // by a deadline in the queue of its duration and by the watchers of the caller's signal.
  const request: RequestHandle = {};
  let timedOut = false;
  const start = () =>
    deadline(timeoutMs, () => {
      timedOut = true;
      request.end?.(new Error(`no response within ${timeoutMs} ms`));
    });
  let timeout = start();
  // A wait for a new permit before the write is the rate limit's, as the first one was: the
  // request's time runs again from the write.
  request.beforeWrite =
    beforeWrite &&
    (() => {
      const hold = beforeWrite();
      if (hold === undefined) return undefined;
      timeout.cancel();
      return hold.then(() => {
        timeout = start();
      });
    });
  const unwatch = signal && watchAbort(signal, () => request.end?.(abortReason(signal)));
  const says = (text: string): string => serverSays(post.errorDetail(text), post.secrets);
  try {
    const response = await httpPost(post.url, post.headers, post.body, request);
    const text = response.text;
    const { headers } = response;
    if (!response.ok) {
      return {
        result: httpFailure(response.status, parseRetryAfter(headers), says(text)),
        headers,
      };
    }
    return { result: post.parse(text, says), headers };
  } catch (error) {
    if (signal?.aborted) throw abortReason(signal);
    if (timedOut) return { result: new Failure("timeout", `no response within ${timeoutMs} ms`) };
    return { result: networkFailure(error, post.url) };
  } finally {
    timeout.cancel();
    unwatch?.();
  }
}

function serverSays(detail: string, secrets: readonly string[]): string {
  let said = detail.replace(/\s+/g, " ").trim().slice(0, 300);
  for (const secret of secrets) if (secret) said = said.replaceAll(secret, "***");
  return said === "" ? "" : `: ${said}`;
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
  let redacted = redactedUrls.get(url);
  if (redacted === undefined) {
    redacted = redactOnce(url);
    if (redactedUrls.size >= 256) redactedUrls.clear();
    redactedUrls.set(url, redacted);
  }
  return redacted;
}

// Each URL redacted once: every request names its endpoint (the rate limits' key), and a URL
// parse per request cost more than the rest of naming it. Bounded like http-post's targets.
const redactedUrls = new Map<string, string>();

function redactOnce(url: string): string {
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
