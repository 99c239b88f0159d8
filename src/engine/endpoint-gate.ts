import type { RateAnswer, BucketSpec, BucketWant } from "../core/rate-limits.js";
import { readRateHeaders } from "../core/rate-headers.js";
import type { RateWaits } from "../store/types.js";
import { LearnedRate } from "./learned-rate.js";

/** Where an endpoint takes chunks of its budget from (the store's bucket, or one in memory). */
export type TakeChunk = (
  want: BucketWant,
) => Promise<{ granted: { requests: number; tokens: number }; retryInMs: number }>;

/** How long a reset the headers do not give is taken to be. */
const FIRST_PAUSE_MS = 1000;
/** How long past a reset a request waits for the answer of one sent since the budget was read. */
const NEWS_PATIENCE_MS = 1000;
/** How soon a process that left a shared budget's reset to the others looks at it again. */
const SHARED_RESET_RETRY_MS = 50;

type Hold = { go: true; until: number } | { go: false; ms: number } | { go: false; refill: true };

/** A request's place in the gate (see RatePermit): settled with its answer, or withdrawn unsent. */
export interface GatePermit {
  settle(answer: RateAnswer): void;
  /** Whether the chunk the request was let go from has lapsed (its lease ran out) since. */
  lapsed(): boolean;
  /** Gives the place back: the request was not sent (its permit lapsed before it was written). */
  withdraw(): void;
}

/**
 * One endpoint's budget in this process: the chunk it took of the declared limit's shared bucket
 * (spent within the lease, then lapsed), what the endpoint's last headers said was left, a pause
 * of the whole endpoint after a 429 or 529 (until the reset or Retry-After), a rate learnt from
 * the 429s (`LearnedRate`), and an in-flight cap that halves on a 429 (once for the requests in
 * flight when it came) and grows by 1/cap with each success (AIMD).
 */
export class EndpointGate {
  readonly waits: RateWaits;
  #chunk = { requests: 0, tokens: 0, expiresAt: 0 };
  #refilling: Promise<number> | undefined;
  /** When the bucket said it would have enough again (no asking the store before). */
  #nextTakeAt = 0;
  #inflight = 0;
  /** Requests a chunk that came after its lease ran out still lets go: one per such chunk. */
  #late = 0;
  /** Requests waiting for the endpoint's budget, and their tokens. */
  readonly #waiting = { requests: 0, tokens: 0 };
  #cap = Infinity;
  /** When the in-flight cap was last cut: a 429 of a request sent before is the same congestion. */
  #cutAt = -Infinity;
  /** Requests sent so far, and which of them the budget last known was read from. */
  #sent = 0;
  #learnedFrom = 0;
  readonly #pace = new LearnedRate();
  #pausedUntil = 0;
  #lastSuccess = -Infinity;
  #known: { requests?: Left; tokens?: Left } = {};
  /** The requests axis as the last answer said it (before the in-flight correction). */
  #reading: { remaining: number; seq: number } | undefined;
  /**
   * Requests the endpoint took per request this process sent, between two answers: 1 alone,
   * about n when n processes share its budget (see #learnShare).
   */
  #share = 1;
  readonly #wakers = new Set<() => void>();

  constructor(
    readonly name: string,
    private readonly spec: BucketSpec | undefined,
    private readonly take: TakeChunk,
    private readonly now: () => number,
    private readonly onWaiting: (waiting: boolean) => void,
    /** Told each pause a 429 or 529 asks for (the limiter shares it through the store). */
    private readonly onPause: (ms: number) => void = () => {},
    /** Where the chances of `#hold` come from (in [0, 1)). */
    private readonly random: () => number = Math.random,
  ) {
    this.waits = { endpoint: name, requests: 0, throttled: 0, rejected: 0, waitMs: 0 };
  }

  /** Waits until a request of `tokens` may go; the returned permit settles it. */
  async acquire(tokens: number, signal?: AbortSignal): Promise<GatePermit> {
    const started = this.now();
    let waited = false;
    let until = Infinity;
    for (;;) {
      const hold = this.#hold(tokens);
      if (hold.go) {
        until = hold.until;
        break;
      }
      if (!waited) {
        this.onWaiting(true);
        this.#waiting.requests++;
        this.#waiting.tokens += tokens;
      }
      waited = true;
      try {
        if ("refill" in hold) {
          const retryInMs = await this.#refill(tokens);
          if (retryInMs > 0) await this.#sleep(retryInMs, signal);
          else if (signal?.aborted) throw abortError(signal);
        } else await this.#sleep(hold.ms, signal);
      } catch (error) {
        this.#unwait(tokens);
        throw error;
      }
    }
    this.waits.requests++;
    if (waited) {
      this.#unwait(tokens);
      this.waits.throttled++;
      this.waits.waitMs += Math.round(this.now() - started);
    }
    this.#inflight++;
    const sentAt = this.now();
    const seq = ++this.#sent;
    let settled = false;
    return {
      settle: (answer) => {
        if (settled) return;
        settled = true;
        this.#settle(tokens, answer, sentAt, seq);
      },
      lapsed: () => !settled && this.now() >= until,
      withdraw: () => {
        if (settled) return;
        settled = true;
        // Not sent: no request in the figures (the time it waited stays counted), nor in flight.
        this.waits.requests--;
        if (waited) this.waits.throttled--;
        this.#withdraw();
      },
    };
  }

  #unwait(tokens: number): void {
    this.onWaiting(false);
    this.#waiting.requests--;
    this.#waiting.tokens -= tokens;
  }

  /** Pauses the endpoint for `ms` from now (a pause another process was asked for). */
  pauseFor(ms: number): void {
    this.#pausedUntil = Math.max(this.#pausedUntil, this.now() + ms);
  }

  /** Requests waiting for the endpoint's budget now. */
  get waiting(): number {
    return this.#waiting.requests;
  }

  /** Whether requests are in flight to the endpoint or waiting for it. */
  get active(): boolean {
    return this.#inflight > 0 || this.#waiting.requests > 0;
  }

  /** Whether a request to the endpoint succeeded after `since` (see RatePermit.progressing). */
  succeededSince(since: number): boolean {
    return this.#lastSuccess > since;
  }

  #hold(tokens: number): Hold {
    const t = this.now();
    if (t < this.#pausedUntil) return { go: false, ms: this.#pausedUntil - t };
    if (this.#inflight >= Math.floor(this.#cap)) return { go: false, ms: 1000 };
    // Before the headers' budget, which marks a reset as used when it lets a request go.
    const paced = this.#pace.wait(t);
    if (paced > 0) return { go: false, ms: paced };
    const reset: Left[] = [];
    for (const axis of ["requests", "tokens"] as const) {
      const left = this.#known[axis];
      const need = axis === "requests" ? 1 : tokens;
      if (left && axis === "requests" && left.remaining > 0 && left.remaining < this.#share) {
        // The last of a budget others spend too: this process's part of it is remaining/share
        // of a request, so it sends one with that chance (n processes send about `remaining`
        // together), else leaves the rest to them and waits, as when it is spent.
        if (this.random() * this.#share >= left.remaining) left.remaining = 0;
      }
      if (!left || left.remaining >= need || left.remaining > 0) continue;
      // Spent as far as the last answer said: wait for the reset, or an answer that says more.
      if (t < left.resetAt) return { go: false, ms: Math.min(left.resetAt - t, 1000) };
      // The reset came, but a request sent after the last answer's is on its way: its answer says
      // what is left since, so none goes before it (an answer read late comes with its reset
      // already past, and each such answer let one more request go over the window). Unless
      // that news is over a second late: the reset then lets one go as below.
      if (this.#sent > this.#learnedFrom && t < left.resetAt + NEWS_PATIENCE_MS)
        return { go: false, ms: left.resetAt + NEWS_PATIENCE_MS - t };
      // The reset came: one request goes and its answer says what is left; of processes
      // sharing the budget, each with a chance of 1/share, the others looking again shortly.
      if (this.#share > 1 && this.random() * this.#share >= 1) {
        left.resetAt = t + SHARED_RESET_RETRY_MS;
        return { go: false, ms: SHARED_RESET_RETRY_MS };
      }
      reset.push(left);
    }
    // Until when the request may be written: within its chunk's lease (see RatePermit.lapsed).
    let until = Infinity;
    if (this.spec) {
      const chunk = this.#chunk;
      if (chunk.expiresAt > t && chunk.requests >= 1 && chunk.tokens >= tokens) {
        chunk.requests--;
        chunk.tokens -= tokens;
        until = chunk.expiresAt;
      } else if (this.#late > 0) {
        // Never lapses (`until` stays Infinity): taken back, it would wait for another late chunk.
        this.#late--;
      } else if (t < this.#nextTakeAt) return { go: false, ms: this.#nextTakeAt - t };
      else return { go: false, refill: true };
    }
    // Used only by a request that goes: marked before the chunk refused one, the reset was spent
    // with nothing in flight to answer, and every request waited for ever (seen under load).
    for (const left of reset) left.resetAt = Infinity;
    // Each request this process sends, the others sharing the budget send about `#share - 1`.
    if (this.#known.requests) this.#known.requests.remaining -= this.#share;
    if (this.#known.tokens) this.#known.tokens.remaining -= tokens;
    this.#pace.spend(t);
    return { go: true, until };
  }

  /** Takes a new chunk (one request at a time asks the store); its retry time when none came. */
  #refill(tokens: number): Promise<number> {
    this.#refilling ??= (async () => {
      const spec = this.spec!;
      // What the requests waiting here can spend, up to half the bucket: a chunk this process
      // would not spend within its lease lapses unspent, lost to every other process too.
      const want = {
        requests: clamp(this.#waiting.requests, 1, Math.floor(spec.requestCapacity / 2)),
        tokens: clamp(this.#waiting.tokens, tokens, spec.tokenCapacity / 2),
        minTokens: tokens,
      };
      // The lease runs from before the store was asked: a slow answer shortens it, never extends it.
      const asked = this.now();
      try {
        const { granted, retryInMs } = await this.take(want);
        this.#nextTakeAt = this.now() + retryInMs;
        if (granted.requests > 0) {
          // What is left of the last chunk lapses with it: all that is spent was taken within a lease.
          this.#chunk = { ...granted, expiresAt: asked + spec.leaseMs };
          // An answer slower than the lease (a loaded store) still lets one request go, or every
          // request would wait for ever, each chunk lapsing as it came: one request over the
          // bound per such answer, at most.
          if (this.#chunk.expiresAt <= this.now()) this.#late = 1;
        }
        return retryInMs;
      } finally {
        this.#refilling = undefined;
      }
    })();
    return this.#refilling;
  }

  #withdraw(): void {
    this.#inflight--;
    // A reset it spent (see #hold) waited for its answer as the news of what is left: none will
    // come, so the budget the headers said is forgotten, as after an answer without headers.
    for (const axis of ["requests", "tokens"] as const) {
      if (this.#known[axis]?.resetAt === Infinity) delete this.#known[axis];
    }
    for (const wake of this.#wakers) wake();
  }

  #settle(estimate: number, answer: RateAnswer, sentAt: number, seq: number): void {
    this.#inflight--;
    const t = this.now();
    const said = answer.headers ? readRateHeaders(answer.headers) : {};
    if (answer.status === 429 || answer.status === 529) {
      this.waits.rejected++;
      const resets = [said.requests, said.tokens]
        .filter((left) => left !== undefined && left.remaining <= 0)
        .map((left) => left?.resetMs ?? 0);
      // Nothing said when: no pause of the endpoint (the request backs off by itself), AIMD only.
      const pause = said.retryAfterMs ?? (resets.length > 0 ? Math.max(...resets) : 0);
      this.#pausedUntil = Math.max(this.#pausedUntil, t + pause);
      if (pause > 0) this.onPause(pause);
      this.#pace.rejected(sentAt, t, this.#pausedUntil);
      // Once per congestion: the other requests in flight when it began are refused with it.
      if (sentAt >= this.#cutAt) {
        this.#cutAt = t;
        this.#cap = Math.max(1, Math.floor(Math.min(this.#cap, this.#inflight + 1) / 2));
      }
    } else if (answer.status >= 200 && answer.status < 300) {
      this.#lastSuccess = t;
      this.#pace.succeeded();
      if (Number.isFinite(this.#cap)) this.#cap += 1 / this.#cap;
      if (this.spec && answer.tokens !== undefined && this.#chunk.expiresAt > t) {
        // Settled with the reply's usage: an estimate above it goes back to the chunk.
        this.#chunk.tokens += estimate - answer.tokens;
      }
    }
    this.#learn(said, t, seq);
    for (const wake of this.#wakers) wake();
  }

  /**
   * What the headers say is left, less what is in flight (they may not have counted it yet). An
   * answer to a request sent before the one the budget was last read from is older news: answers
   * come back out of order on a busy machine, and its larger "remaining" would let through
   * requests the server has no room for.
   */
  #learn(said: ReturnType<typeof readRateHeaders>, t: number, seq: number): void {
    if (seq < this.#learnedFrom) return;
    this.#learnedFrom = seq;
    if (said.requests) this.#learnShare(said.requests.remaining, seq);
    for (const axis of ["requests", "tokens"] as const) {
      const left = said[axis];
      if (!left) {
        if (this.#known[axis]?.resetAt === Infinity) delete this.#known[axis];
        continue;
      }
      // Others sharing the budget have about as many in flight each as this process.
      const inflight = axis === "requests" ? this.#inflight * this.#share : 0;
      this.#known[axis] = {
        remaining: left.remaining - inflight,
        resetAt: t + (left.resetMs ?? FIRST_PAUSE_MS),
      };
    }
  }

  /**
   * How many requests the endpoint took per request this process sent, from two answers' counts
   * of what is left: the fall between them over this process's requests sent between them (its
   * requests are counted in the order they were sent). About 1 alone; about n when n processes
   * (workers, or other runs on the same key) spend the same budget, none of which this process
   * can see in flight. Read only while the count falls (a window that frees requests as it
   * slides says nothing of who spends them); averaged, between 1 and 64.
   */
  #learnShare(remaining: number, seq: number): void {
    const last = this.#reading;
    this.#reading = { remaining, seq };
    if (!last || seq <= last.seq || remaining >= last.remaining) return;
    const taken = (last.remaining - remaining) / (seq - last.seq);
    this.#share = Math.min(64, Math.max(1, 0.7 * this.#share + 0.3 * taken));
  }

  /** Waits `ms`, or less when an answer comes (it may free the endpoint); rejects on `signal`. */
  #sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return new Promise((resolve, reject) => {
      if (signal?.aborted) {
        reject(abortError(signal));
        return;
      }
      const done = (): void => {
        clearTimeout(timer);
        this.#wakers.delete(done);
        signal?.removeEventListener("abort", onAbort);
        resolve();
      };
      const onAbort = (): void => {
        done();
        reject(abortError(signal!));
      };
      const timer = setTimeout(done, Math.max(1, ms));
      this.#wakers.add(done);
      signal?.addEventListener("abort", onAbort, { once: true });
    });
  }
}

interface Left {
  remaining: number;
  resetAt: number;
}

function clamp(value: number, least: number, most: number): number {
  return Math.max(least, Math.min(value, Math.max(least, most)));
}

function abortError(signal: AbortSignal): Error {
  const reason: unknown = signal.reason;
  if (reason instanceof Error) return reason;
  const error = new Error("aborted");
  error.name = "AbortError";
  return error;
}
