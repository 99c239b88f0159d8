/** Exponential backoff settings, in milliseconds. */
export interface Backoff {
  /** The first retry waits up to this long; each later one doubles it. */
  initialMs: number;
  /** No computed delay exceeds this. */
  maxMs: number;
  /** A server's Retry-After is honoured up to this long. */
  retryAfterCapMs: number;
}

export const defaultBackoff: Backoff = { initialMs: 500, maxMs: 30_000, retryAfterCapMs: 60_000 };

/**
 * The wait before retry number `retry` (0-based): exponential backoff with full jitter, unless
 * the server said how long to wait, in which case that (capped) wins.
 *
 * @example retryDelayMs(2, defaultBackoff) // a random value in [0, 2000)
 */
export function retryDelayMs(
  retry: number,
  backoff: Backoff,
  retryAfterMs?: number,
  random: () => number = Math.random,
): number {
  if (retryAfterMs !== undefined) return Math.min(retryAfterMs, backoff.retryAfterCapMs);
  const ceiling = Math.min(backoff.maxMs, backoff.initialMs * 2 ** retry);
  return Math.floor(random() * ceiling);
}

export { parseRetryAfter } from "../core/rate-headers.js";

/**
 * Waits `ms`, or rejects with the signal's reason as soon as it aborts.
 *
 * @example await sleep(250, ctx.signal);
 */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(abortReason(signal));
      return;
    }
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(abortReason(signal as AbortSignal));
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

/** The error to throw for an aborted signal: its reason when that is an Error. */
export function abortReason(signal: AbortSignal): Error {
  const reason: unknown = signal.reason;
  if (reason instanceof Error) return reason;
  const error = new Error(reason === undefined ? "aborted" : `aborted: ${String(reason)}`);
  error.name = "AbortError";
  return error;
}
