import {
  bucketSpec,
  declaredLimit,
  endpointName,
  takeFromBucket,
  type BucketLevel,
  type RateEndpoint,
  type RateGate,
  type RateLimits,
  type RatePermit,
} from "../core/rate-limits.js";
import type { RateBudgetStore, RateWaits } from "../store/types.js";
import { EndpointGate, type TakeChunk } from "./endpoint-gate.js";

export interface RateLimiterOptions {
  /** Declared limits (the eval's `rateLimits`, `--rpm`/`--tpm`). */
  limits: RateLimits;
  /** The store's shared buckets; absent: each endpoint's bucket is this process's own. */
  budget?: RateBudgetStore | undefined;
  /** Told how many requests wait on a rate limit whenever that changes. */
  onWaiting?: (waiting: number) => void;
  now?: () => number;
}

/**
 * The rate limits of one execution's model calls (a RateGate): one EndpointGate per endpoint,
 * created on its first request, with the declared limit's bucket (shared through the store when
 * one is given) or none (its headers and 429s rule alone). `waits()` are the figures `show`
 * reports.
 *
 * @example const limiter = new RateLimiter({ limits: { "openai:gpt-4o-mini": { rpm: 500 } }, budget: store.rates });
 */
export class RateLimiter implements RateGate {
  readonly #gates = new Map<string, EndpointGate>();
  readonly #now: () => number;
  #waiting = 0;

  constructor(private readonly options: RateLimiterOptions) {
    this.#now = options.now ?? (() => performance.now());
  }

  async acquire(endpoint: RateEndpoint, tokens: number, signal?: AbortSignal): Promise<RatePermit> {
    const gate = this.#gate(endpoint);
    const settle = await gate.acquire(tokens, signal);
    const sentAt = this.#now();
    return { settle, progressing: () => gate.succeededSince(sentAt) };
  }

  /** The figures of every endpoint this execution sent to. */
  waits(): RateWaits[] {
    return [...this.#gates.values()].map((gate) => ({ ...gate.waits }));
  }

  /** Requests waiting on a rate limit now. */
  get waiting(): number {
    return this.#waiting;
  }

  #gate(endpoint: RateEndpoint): EndpointGate {
    const name = endpointName(endpoint);
    let gate = this.#gates.get(name);
    if (gate) return gate;
    const limit = declaredLimit(this.options.limits, endpoint);
    const spec =
      limit && (limit.rpm !== undefined || limit.tpm !== undefined) ? bucketSpec(limit) : undefined;
    let take: TakeChunk;
    const budget = this.options.budget;
    if (spec && budget) take = (want) => budget.take(name, spec, want);
    else {
      let level: BucketLevel | undefined;
      take = async (want) => {
        const taken = takeFromBucket(level, spec!, want, this.#now());
        level = taken.level;
        return taken;
      };
    }
    gate = new EndpointGate(name, spec, take, this.#now, (waiting) => {
      this.#waiting += waiting ? 1 : -1;
      this.options.onWaiting?.(this.#waiting);
    });
    this.#gates.set(name, gate);
    return gate;
  }
}
