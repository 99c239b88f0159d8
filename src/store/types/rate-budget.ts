import type { BucketSpec, BucketWant, RateWaits } from "../../core/rate-limits.js";

/**
 * Rate limits shared through the store: one token bucket per endpoint (see BucketSpec), from
 * which processes take chunks (no request waits on a round trip to the store), and the waits
 * each process's model calls had per run and endpoint, which `show` sums.
 */
export interface RateBudgetStore {
  /**
   * Takes up to `want` from the endpoint's bucket, read, refilled by the store's clock and
   * written back in one transaction: what was granted, or, nothing granted, when to ask again.
   */
  take(
    endpoint: string,
    spec: BucketSpec,
    want: BucketWant,
  ): Promise<{ granted: { requests: number; tokens: number }; retryInMs: number }>;
  /**
   * The endpoint's pause after a 429, shared by every process of the store: extended to at
   * least `forMs` from now by the store's clock (0 extends nothing), and how long it has left, ms.
   */
  sharePause(endpoint: string, forMs: number): Promise<number>;
  /** Records a process's totals for a run and endpoint (replacing its earlier totals). */
  recordWaits(runId: string, owner: string, waits: readonly RateWaits[]): Promise<void>;
  /** A run's waits per endpoint, summed over every process that recorded some. */
  listWaits(runId: string): Promise<RateWaits[]>;
}
