import type { Store } from "../store/types.js";
import type { RateLimiter } from "./rate-limiter.js";

/** How often a process records its rate-limit figures while it executes. */
const RECORD_MS = 2000;

/**
 * Records this execution's rate-limit figures (`RateLimiter.waits`, with the requests waiting
 * now) in the store under its owner (or worker) token every 2 s and once more at `stop()`, so
 * `show` sums what every process of the run saw, and the UI tells that a run waits. A failed write is left for the next: the figures are totals, and the last one stands.
 *
 * @example const waits = recordRateWaits(store, run.id, owner.token, limiter); … await waits.stop();
 */
export function recordRateWaits(
  store: Store,
  runId: string,
  token: string,
  limiter: RateLimiter,
): { stop(): Promise<void> } {
  let writing: Promise<void> = Promise.resolve();
  const record = (): Promise<void> => {
    const waits = limiter
      .waits()
      .filter((w) => w.requests > 0 || w.rejected > 0 || (w.waiting ?? 0) > 0);
    if (waits.length === 0) return writing;
    writing = writing.then(() => store.rates.recordWaits(runId, token, waits)).catch(() => {});
    return writing;
  };
  const timer = setInterval(() => void record(), RECORD_MS);
  timer.unref();
  return {
    async stop() {
      clearInterval(timer);
      await record();
    },
  };
}
