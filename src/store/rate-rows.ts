import type { RateWaits } from "./types.js";

/**
 * How recent a process's record must be for its waiting requests to count as waiting now: three
 * of its 2 s records (`engine/rate-waits.ts`), so a process that died waiting is not read as
 * waiting for long.
 */
export const WAITING_FRESH_MS = 6000;

/** The rate-limit statements both dialects share (`@name` parameters). */
export const RATE_SQL = {
  bucketGet: "SELECT requests, tokens, at_ms FROM rate_buckets WHERE endpoint = @endpoint",
  bucketPut:
    "INSERT INTO rate_buckets (endpoint, requests, tokens, at_ms) VALUES (@endpoint, @requests, @tokens, @atMs) " +
    "ON CONFLICT (endpoint) DO UPDATE SET requests = excluded.requests, tokens = excluded.tokens, at_ms = excluded.at_ms",
  /** `now`: the store's clock in ms (a parameter on SQLite, the server's on PostgreSQL). */
  waitsPut: (now: string) =>
    "INSERT INTO rate_waits (run_id, owner, endpoint, requests, throttled, rejected, wait_ms, waiting, recorded_at_ms) " +
    `VALUES (@runId, @owner, @endpoint, @requests, @throttled, @rejected, @waitMs, @waiting, ${now}) ` +
    "ON CONFLICT (run_id, owner, endpoint) DO UPDATE SET requests = excluded.requests, " +
    "throttled = excluded.throttled, rejected = excluded.rejected, wait_ms = excluded.wait_ms, " +
    "waiting = excluded.waiting, recorded_at_ms = excluded.recorded_at_ms",
  /** Requests waiting now: those of the records made within WAITING_FRESH_MS of `now`. */
  waitsList: (now: string) =>
    "SELECT endpoint, SUM(requests) AS requests, SUM(throttled) AS throttled, SUM(rejected) AS rejected, " +
    `SUM(wait_ms) AS wait_ms, SUM(CASE WHEN recorded_at_ms > ${now} - ${WAITING_FRESH_MS} THEN waiting ELSE 0 END) AS waiting ` +
    "FROM rate_waits WHERE run_id = @runId GROUP BY endpoint ORDER BY endpoint",
};

/**
 * The row of `rate_buckets` that holds an endpoint's shared pause (its `at_ms`: until when). An
 * endpoint's name has no `#` (`endpointName` drops a URL's fragment), so it is never a bucket's.
 */
export function pauseRow(endpoint: string): string {
  return `${endpoint}#pause`;
}

export interface BucketRow {
  requests: number;
  tokens: number;
  at_ms: number;
}

export interface RateWaitsRow {
  endpoint: string;
  requests: number | string;
  throttled: number | string;
  rejected: number | string;
  wait_ms: number | string;
  waiting: number | string;
}

/** A summed row as RateWaits (PostgreSQL's SUM of a bigint is a numeric, read as text). */
export function toRateWaits(row: RateWaitsRow): RateWaits {
  return {
    endpoint: row.endpoint,
    requests: Number(row.requests),
    throttled: Number(row.throttled),
    rejected: Number(row.rejected),
    waitMs: Number(row.wait_ms),
    waiting: Number(row.waiting),
  };
}

/** The parameters of one process's totals for a run and endpoint. */
export function waitsParams(runId: string, owner: string, w: RateWaits): Record<string, unknown> {
  return {
    runId,
    owner,
    endpoint: w.endpoint,
    requests: w.requests,
    throttled: w.throttled,
    rejected: w.rejected,
    waitMs: Math.round(w.waitMs),
    waiting: w.waiting ?? 0,
  };
}
