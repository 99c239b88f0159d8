import { randomBytes } from "node:crypto";
import {
  bucketSpec,
  declaredLimit,
  endpointName,
  keyedEndpointName,
  takeFromBucket,
  type BucketLevel,
  type RateEndpoint,
  type RateGate,
  type RateLimits,
  type RatePermit,
} from "../core/rate-limits.js";
import type { RateBudgetStore, RateWaits } from "../store/types.js";
import { credentialHash } from "./credential-hash.js";
import { EndpointGate, type TakeChunk } from "./endpoint-gate.js";

/** How often a process reads the shared pause of each endpoint it has requests for. */
const POLL_MS = 250;

export interface RateLimiterOptions {
  /** Declared limits (the eval's `rateLimits`, `--rpm`/`--tpm`). */
  limits: RateLimits;
  /** The store's shared buckets; absent: each endpoint's bucket is this process's own. */
  budget?: RateBudgetStore | undefined;
  /**
   * The salt credentials are hashed with into their budgets' names: the store's (`cache.salt()`),
   * so every process of the store names one key's budget alike. Absent: this limiter's own.
   */
  salt?: (() => Promise<string>) | undefined;
  /** Told how many requests wait on a rate limit whenever that changes. */
  onWaiting?: (waiting: number) => void;
  now?: () => number;
}

/**
 * The rate limits of one execution's model calls (a RateGate): one EndpointGate per endpoint
 * and credential (a provider limits each key on its own; the credential is known by its keyed
 * hash only, see keyedEndpointName), created on its first request, with the declared limit's bucket (shared through the store when
 * one is given) or none (its headers and 429s rule alone). With a store, the pause a 429 asks
 * for is the store's too: written when it comes, read before an endpoint's first request and
 * every 250 ms while requests are in flight or waiting, so every process pauses, not only the
 * one refused. `waits()` are the figures `show` reports; `close()` stops the reading.
 *
 * @example const limiter = new RateLimiter({ limits: { "openai:gpt-4o-mini": { rpm: 500 } }, budget: store.rates });
 */
export class RateLimiter implements RateGate {
  readonly #gates = new Map<string, EndpointGate>();
  readonly #now: () => number;
  #waiting = 0;
  #poll: ReturnType<typeof setInterval> | undefined;
  readonly #polling = new Set<EndpointGate>();
  /** Each gate's first read of its shared pause, which its requests wait for. */
  readonly #firstRead = new Map<EndpointGate, Promise<void>>();
  /** Each credential's keyed hash (in memory only), and the salt's read. */
  readonly #keyHashes = new Map<string, string>();
  #salt: Promise<string> | undefined;

  constructor(private readonly options: RateLimiterOptions) {
    this.#now = options.now ?? (() => performance.now());
  }

  async acquire(endpoint: RateEndpoint, tokens: number, signal?: AbortSignal): Promise<RatePermit> {
    const { credential } = endpoint;
    const keyHash =
      credential === undefined
        ? undefined
        : (this.#keyHashes.get(credential) ?? (await this.#hashOf(credential)));
    const gate = this.#gate(endpoint, keyedEndpointName(endpointName(endpoint), keyHash));
    // An endpoint another process was refused by: the first requests here wait for its pause too.
    await this.#firstRead.get(gate);
    const permit = await gate.acquire(tokens, signal);
    const sentAt = this.#now();
    return { ...permit, progressing: () => gate.succeededSince(sentAt) };
  }

  /** The figures of every endpoint this execution sent to, with the requests waiting on it now. */
  waits(): RateWaits[] {
    return [...this.#gates.values()].map((gate) => ({ ...gate.waits, waiting: gate.waiting }));
  }

  /** Stops reading the endpoints' shared pauses (the execution ended). */
  close(): void {
    clearInterval(this.#poll);
    this.#poll = undefined;
  }

  /** Requests waiting on a rate limit now. */
  get waiting(): number {
    return this.#waiting;
  }

  /** A credential's keyed hash with the store's salt (a failed read of the salt is asked again). */
  async #hashOf(credential: string): Promise<string> {
    this.#salt ??= (
      this.options.salt?.() ?? Promise.resolve(randomBytes(32).toString("hex"))
    ).catch((error: unknown) => {
      this.#salt = undefined;
      throw error;
    });
    const hash = credentialHash(await this.#salt, credential);
    this.#keyHashes.set(credential, hash);
    return hash;
  }

  #gate(endpoint: RateEndpoint, name: string): EndpointGate {
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
    const share = budget
      ? (ms: number) => void budget.sharePause(name, ms).catch(() => {})
      : undefined;
    gate = new EndpointGate(
      name,
      spec,
      take,
      this.#now,
      (waiting) => {
        this.#waiting += waiting ? 1 : -1;
        this.options.onWaiting?.(this.#waiting);
      },
      share,
    );
    this.#gates.set(name, gate);
    this.#firstRead.set(gate, this.#readPause(gate));
    if (budget && !this.#poll) {
      this.#poll = setInterval(() => {
        for (const active of this.#gates.values()) if (active.active) void this.#readPause(active);
      }, POLL_MS);
      this.#poll.unref();
    }
    return gate;
  }

  /** Reads the endpoint's shared pause into its gate (one read at a time; a failed read is none). */
  async #readPause(gate: EndpointGate): Promise<void> {
    const budget = this.options.budget;
    if (!budget || this.#polling.has(gate)) return;
    this.#polling.add(gate);
    try {
      const left = await budget.sharePause(gate.name, 0);
      if (left > 0) gate.pauseFor(left);
    } catch {
      // The store did not answer: the next read, or this process's own 429s, will tell.
    } finally {
      this.#polling.delete(gate);
    }
  }
}
