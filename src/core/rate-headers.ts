/** What a response's rate-limit headers say about its endpoint's budget. */
export interface RateHeaders {
  /** Requests left in the window, and in how many ms the window's requests reset. */
  requests?: { remaining: number; resetMs: number | undefined };
  tokens?: { remaining: number; resetMs: number | undefined };
  /** The server's `retry-after-ms` / `retry-after` (seconds or an HTTP date), ms. */
  retryAfterMs?: number;
}

/**
 * Reads OpenAI's `x-ratelimit-remaining-requests`/`-tokens` with `x-ratelimit-reset-*`
 * (durations such as "1m2.5s", "20ms"), Anthropic's `anthropic-ratelimit-*-remaining` with
 * `-reset` (an RFC 3339 time) and `retry-after`. Absent or unreadable headers say nothing.
 *
 * @example readRateHeaders(new Headers({ "x-ratelimit-remaining-requests": "3", "x-ratelimit-reset-requests": "1.5s" })).requests
 * // { remaining: 3, resetMs: 1500 }
 */
export function readRateHeaders(
  headers: Pick<Headers, "get">,
  now: number = Date.now(),
): RateHeaders {
  const out: RateHeaders = {};
  for (const axis of ["requests", "tokens"] as const) {
    const openai = count(headers.get(`x-ratelimit-remaining-${axis}`));
    if (openai !== undefined) {
      out[axis] = {
        remaining: openai,
        resetMs: duration(headers.get(`x-ratelimit-reset-${axis}`)),
      };
      continue;
    }
    const anthropic = count(headers.get(`anthropic-ratelimit-${axis}-remaining`));
    if (anthropic !== undefined) {
      out[axis] = {
        remaining: anthropic,
        resetMs: untilTime(headers.get(`anthropic-ratelimit-${axis}-reset`), now),
      };
    }
  }
  const retryAfter = parseRetryAfter(headers, now);
  if (retryAfter !== undefined) out.retryAfterMs = retryAfter;
  return out;
}

/**
 * Ms from `now` until an RFC 3339 time has surely passed. A time is written to some precision
 * (whole seconds, or ms): the moment it names lies anywhere within that last unit (a server
 * truncates its clock to write it), so the wait runs to the unit's end, never early.
 *
 * @example untilTime("1970-01-01T00:00:02Z", 1000) // 2000: any moment of that second
 */
function untilTime(value: string | null, now: number): number | undefined {
  const at = Date.parse(value ?? "");
  if (Number.isNaN(at)) return undefined;
  const digits = /:\d\d\.(\d+)/.exec(value!)?.[1]?.length ?? 0;
  const unit = 10 ** Math.max(0, 3 - digits);
  return Math.max(0, at + unit - now);
}

function count(value: string | null): number | undefined {
  if (value === null || !/^\s*\d+\s*$/.test(value)) return undefined;
  return Number(value);
}

/** "1m2.5s", "6s", "20ms", "1h" as ms; a bare number as seconds. */
function duration(value: string | null): number | undefined {
  if (value === null) return undefined;
  const text = value.trim();
  if (/^\d+(\.\d+)?$/.test(text)) return Number(text) * 1000;
  const parts = [...text.matchAll(/(\d+(?:\.\d+)?)(ms|h|m|s)/g)];
  if (parts.length === 0 || parts.map((p) => p[0]).join("") !== text) return undefined;
  const unit = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 } as const;
  return parts.reduce((ms, [, n, u]) => ms + Number(n) * unit[u as keyof typeof unit], 0);
}

/**
 * Reads the wait a server asked for: `retry-after-ms` (OpenAI), else `Retry-After` as seconds
 * or an HTTP date. Returns undefined when absent or unreadable.
 *
 * @example parseRetryAfter(new Headers({ "retry-after": "2" })) // 2000
 */
export function parseRetryAfter(
  headers: Pick<Headers, "get">,
  now: number = Date.now(),
): number | undefined {
  const ms = headers.get("retry-after-ms");
  if (ms !== null && /^\s*\d+(\.\d+)?\s*$/.test(ms)) return Math.ceil(Number(ms));
  const value = headers.get("retry-after");
  if (value === null || value.trim() === "") return undefined;
  if (/^\s*\d+(\.\d+)?\s*$/.test(value)) return Math.ceil(Number(value) * 1000);
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}
