/** How much a 429 cuts a learned rate (the multiplicative decrease). */
const DECREASE = 0.9;
/** How much each success raises a learned rate: ~6 % over 600 successes (the probe for more). */
const GROWTH = 1 / 10_000;
/** What a learned rate lets go at once after a lull: this long's worth of requests (at least one). */
const BURST_MS = 50;
/** What a whole-second Retry-After is taken to have been rounded up by. */
const ROUNDING_MS = 500;

/**
 * The request rate of an endpoint, learned from its 429s (AIMD on the rate, beside the gate's
 * cap on the requests in flight). Until the first 429 nothing is paced. The first 429 says the
 * provider's window filled: the successes from the first request to the end of the pause it
 * asked for (less half a second of a Retry-After's rounding) are what one window admits, and
 * from then on requests are paced at that rate, so later windows do not fill in a burst (against
 * a fast provider, each burst is refused a 429 per request in flight: 64 at concurrency 64).
 * Each later 429 cuts the rate by a tenth; each success raises it by 1/10 000, probing for more.
 * A 429 of a request sent before the last cut is the same congestion and cuts nothing.
 *
 * @example const pace = new LearnedRate(); const ms = pace.wait(now); if (ms === 0) pace.spend(now);
 */
export class LearnedRate {
  /** Requests per ms; undefined until the first 429. */
  #rate: number | undefined;
  #level = 0;
  #atMs = 0;
  #firstAt: number | undefined;
  #successes = 0;
  #lastCut = -Infinity;
  /** Until when the first congestion pauses the endpoint (its rate is learnt then). */
  #learning: number | undefined;

  /** The learned rate in requests per second (undefined before the first 429). */
  get perSecond(): number | undefined {
    return this.#rate === undefined ? undefined : this.#rate * 1000;
  }

  /** Ms until a request may go at the learned rate (0: now). */
  wait(now: number): number {
    this.#firstAt ??= now;
    if (this.#learning !== undefined && now >= this.#learning) this.#learn(now);
    const rate = this.#rate;
    if (rate === undefined) return 0;
    this.#refill(now);
    return this.#level >= 1 ? 0 : Math.ceil((1 - this.#level) / rate);
  }

  /** A request goes now (after `wait` said 0). */
  spend(now: number): void {
    if (this.#rate === undefined) return;
    this.#refill(now);
    this.#level -= 1;
  }

  succeeded(): void {
    this.#successes++;
    if (this.#rate !== undefined) this.#rate *= 1 + GROWTH;
  }

  /** A 429 (or 529) answered a request sent at `sentAt`; the endpoint pauses until `pausedUntil`. */
  rejected(sentAt: number, now: number, pausedUntil: number): void {
    const until = Math.max(now, pausedUntil);
    if (this.#rate === undefined) {
      // The first congestion: learnt when its pause ends, once the window's last successes are in.
      this.#learning = Math.max(this.#learning ?? until, until);
      this.#lastCut = now;
      return;
    }
    if (sentAt < this.#lastCut) return;
    this.#lastCut = now;
    this.#rate *= DECREASE;
    this.#restart(until);
  }

  /** The first pause ended: the window admitted the successes so far in the time to its end. */
  #learn(now: number): void {
    const until = this.#learning!;
    this.#learning = undefined;
    // A Retry-After in whole seconds is rounded up: half a second of it is taken as rounding.
    const span = Math.max(until - (this.#firstAt ?? until) - ROUNDING_MS, BURST_MS);
    this.#rate = Math.max(1, this.#successes) / span;
    this.#restart(Math.max(now, until));
  }

  /** Nothing saved up over a pause: the first requests after it go at the rate, not at once. */
  #restart(at: number): void {
    this.#level = 0;
    this.#atMs = at;
  }

  #refill(now: number): void {
    const rate = this.#rate!;
    if (now > this.#atMs) {
      const most = Math.max(1, rate * BURST_MS);
      this.#level = Math.min(most, this.#level + (now - this.#atMs) * rate);
      this.#atMs = now;
    }
  }
}
