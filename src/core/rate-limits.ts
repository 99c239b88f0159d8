/**
 * A provider's rate limit as an eval declares it (`rateLimits`) or `--rpm`/`--tpm` give it:
 * requests and tokens per minute, measured by the provider over `windowMs` (a minute unless a
 * provider, or a test server, says otherwise: then the budget per window is rpm × windowMs / 60 000).
 */
export interface RateLimit {
  rpm?: number | undefined;
  tpm?: number | undefined;
  windowMs?: number | undefined;
}

/** Declared limits by `provider:model` (e.g. `openai:gpt-4o-mini`), bare model id, or base URL. */
export type RateLimits = Readonly<Record<string, RateLimit>>;

/**
 * Where a request goes, as rate limits see it: one budget per provider, model, base URL and
 * credential (a provider limits each API key, or organisation, on its own).
 */
export interface RateEndpoint {
  provider: string;
  model: string;
  baseURL: string;
  /**
   * The credential the request carries (its key and header values, as text): never stored or
   * shown, only hashed with the store's salt into the budget's name (see keyedEndpointName).
   * Absent: a request without one (a local server), or one whose credential stet cannot see.
   */
  credential?: string | undefined;
}

/** How a request that held a permit was answered. */
export interface RateAnswer {
  /** The HTTP status; 0 when no response came. */
  status: number;
  /** The response's headers (x-ratelimit-*, anthropic-ratelimit-*, retry-after). */
  headers?: Pick<Headers, "get"> | undefined;
  /** Tokens the reply's usage says the request used (prompt and completion). */
  tokens?: number | undefined;
}

/** One request's place in its endpoint's budget: settled with the answer. */
export interface RatePermit {
  settle(answer: RateAnswer): void;
  /**
   * Whether the endpoint is making progress (another request to it succeeded since this one was
   * sent): a 429 or 529 then waits for the endpoint's budget and is sent again without counting
   * against the call's retries; otherwise it is an ordinary retryable failure.
   */
  progressing(): boolean;
  /**
   * Whether the budget the request was let go on has lapsed since (its chunk of the shared bucket
   * outlived its lease): a request not yet written then goes back (`withdraw`) for a new permit.
   * The bucket's bound holds for what is written within a lease of being taken; a process on a
   * loaded machine took up to a second to write a request on a new connection after its permit.
   */
  lapsed(): boolean;
  /** Gives the permit back unused: the request was not sent. */
  withdraw(): void;
}

/**
 * The run's rate limits, shared by every model call of the run (and, through the store, every
 * run and worker of it): a request is sent once its endpoint's budget allows it.
 */
export interface RateGate {
  /** Waits until a request of about `tokens` tokens may go to `endpoint`; rejects on `signal`. */
  acquire(endpoint: RateEndpoint, tokens: number, signal?: AbortSignal): Promise<RatePermit>;
}

/**
 * The name of an endpoint's budget: provider, model and base URL (without credentials, query or
 * fragment); what the store keeps the shared budget and the run's waits under.
 *
 * @example endpointName({ provider: "openai", model: "gpt-4o-mini", baseURL: "https://api.openai.com/v1" })
 * // "openai:gpt-4o-mini@https://api.openai.com/v1"
 */
export function endpointName(endpoint: RateEndpoint): string {
  let base = endpoint.baseURL;
  const match = /^([a-z][a-z0-9+.-]*:\/\/)(?:[^@/]*@)?([^?#]*)/i.exec(base);
  if (match) base = `${match[1]}${match[2]}`;
  return `${endpoint.provider}:${endpoint.model}@${base.replace(/\/+$/, "")}`;
}

/** How many hex digits of a credential's keyed hash name its budget (64 bits). */
const KEY_DIGITS = 16;

/**
 * The name of one credential's budget at an endpoint: the endpoint's name and the first 16 hex
 * digits of the credential's keyed hash (HMAC with the store's salt, never the key or a plain
 * hash of it). What the store keeps the budget, the pause and the figures under.
 *
 * @example keyedEndpointName("openai:m@https://api.openai.com/v1", "3fa2…") // "openai:m@https://api.openai.com/v1 key:3fa2…"
 */
export function keyedEndpointName(name: string, keyHash: string | undefined): string {
  return keyHash === undefined ? name : `${name} key:${keyHash.slice(0, KEY_DIGITS)}`;
}

/**
 * The declared limit of an endpoint: the entry named `provider:model`, else the bare model id,
 * else its base URL, else `*` (`--rpm`/`--tpm` without `--model`). Undefined when none applies (the endpoint's headers then rule alone).
 *
 * @example declaredLimit({ "openai:m": { rpm: 500 } }, { provider: "openai", model: "m", baseURL: "u" }) // { rpm: 500 }
 */
export function declaredLimit(limits: RateLimits, endpoint: RateEndpoint): RateLimit | undefined {
  const base = endpoint.baseURL.replace(/\/+$/, "");
  return (
    limits[`${endpoint.provider}:${endpoint.model}`] ??
    limits[endpoint.model] ??
    limits[base] ??
    limits[`${base}/`] ??
    limits["*"]
  );
}

/**
 * An endpoint's shared budget as a token bucket over the provider's window `W`: it holds at most
 * `capacity` (a fortieth of the window's limit) and refills at
 * `(limit − capacity) / (W + 2 × lease)`, where `lease` (W / 40) is how long a process may hold
 * what it took before it lapses. Whatever arrives at the provider in any window W was taken in a
 * span of W + lease (and up to another lease of travel), so it is at most the limit, against a
 * provider counting a sliding window as much as a fixed one; the price is ~7 % of the limit.
 */
export interface BucketSpec {
  requestCapacity: number;
  /** Requests per ms. */
  requestRate: number;
  tokenCapacity: number;
  /** Tokens per ms. */
  tokenRate: number;
  /** How long a process may spend what it took, ms. */
  leaseMs: number;
}

/** Unlimited on one axis: a bucket that is never empty. */
const UNBOUNDED = 1e15;

/**
 * The bucket of a declared limit (see BucketSpec).
 *
 * @example bucketSpec({ rpm: 600 }).requestCapacity // 15
 */
export function bucketSpec(limit: RateLimit): BucketSpec {
  const windowMs = limit.windowMs ?? 60_000;
  const leaseMs = windowMs / 40;
  const axis = (perMinute: number | undefined) => {
    if (perMinute === undefined) return { capacity: UNBOUNDED, rate: UNBOUNDED };
    const perWindow = (perMinute * windowMs) / 60_000;
    const capacity = Math.max(1, perWindow / 40);
    // A limit of a few requests per window (capacity ≥ half of it) refills at half the limit.
    // Two leases, not one: a request also travels to the provider after its chunk was taken.
    return {
      capacity,
      rate: Math.max(perWindow - capacity, perWindow / 2) / (windowMs + 2 * leaseMs),
    };
  };
  const requests = axis(limit.rpm);
  const tokens = axis(limit.tpm);
  return {
    requestCapacity: requests.capacity,
    requestRate: requests.rate,
    tokenCapacity: tokens.capacity,
    tokenRate: tokens.rate,
    leaseMs,
  };
}

/** A bucket's level at `atMs`. */
export interface BucketLevel {
  requests: number;
  tokens: number;
  atMs: number;
}

/** What a process asks of a bucket: a chunk, and the least that lets its request go. */
export interface BucketWant {
  requests: number;
  tokens: number;
  /** The request in hand's tokens: granted on credit when the bucket has any (see takeFromBucket). */
  minTokens: number;
}

/**
 * Takes a chunk from a bucket at `nowMs`: the level refilled since it was read (capped at the
 * capacity), then up to `want` of it. A request needs one request and its tokens; when the bucket
 * holds some tokens but fewer than the request in hand needs, that request's tokens are granted
 * on credit (the level goes below zero and refills from there), so a prompt longer than the
 * bucket still goes, and the limit is exceeded by at most one request's tokens. Nothing granted:
 * `retryInMs` says when enough will have refilled.
 *
 * @example takeFromBucket(undefined, bucketSpec({ rpm: 600 }), { requests: 15, tokens: 0, minTokens: 0 }, 0).granted.requests // 15
 */
export function takeFromBucket(
  level: BucketLevel | undefined,
  spec: BucketSpec,
  want: BucketWant,
  nowMs: number,
): { level: BucketLevel; granted: { requests: number; tokens: number }; retryInMs: number } {
  const elapsed = level ? Math.max(0, nowMs - level.atMs) : 0;
  const requests = level
    ? Math.min(spec.requestCapacity, level.requests + elapsed * spec.requestRate)
    : spec.requestCapacity;
  const tokens = level
    ? Math.min(spec.tokenCapacity, level.tokens + elapsed * spec.tokenRate)
    : spec.tokenCapacity;
  if (requests < 1 || tokens <= 0) {
    return {
      level: { requests, tokens, atMs: nowMs },
      granted: { requests: 0, tokens: 0 },
      retryInMs: retryInMs({ requests, tokens }, spec, want),
    };
  }
  const grantedRequests = Math.max(1, Math.min(want.requests, Math.floor(requests)));
  const grantedTokens = Math.max(
    Math.min(want.tokens, tokens),
    Math.min(want.minTokens, want.tokens),
  );
  return {
    level: { requests: requests - grantedRequests, tokens: tokens - grantedTokens, atMs: nowMs },
    granted: { requests: grantedRequests, tokens: grantedTokens },
    retryInMs: 0,
  };
}

/**
 * How long until a bucket at `level` (refilled to now) holds enough to grant a chunk (see
 * takeFromBucket): one request, and some tokens or, when it holds none, the request's own.
 *
 * @example retryInMs({ requests: 0, tokens: 1e15 }, bucketSpec({ rpm: 600 }), { requests: 7, tokens: 0, minTokens: 0 }) // 108
 */
export function retryInMs(
  level: { requests: number; tokens: number },
  spec: BucketSpec,
  want: BucketWant,
): number {
  const forRequests = level.requests < 1 ? (1 - level.requests) / spec.requestRate : 0;
  const forTokens =
    level.tokens <= 0
      ? (Math.min(want.minTokens, spec.tokenCapacity) - level.tokens) / spec.tokenRate
      : 0;
  return Math.ceil(Math.max(forRequests, forTokens, 1));
}

/**
 * The eval's declared limits with `--rpm`/`--tpm` added for the run's main model: under its
 * `--model` when the run has one, else as `*`, which applies to every endpoint the eval declares
 * no limit for.
 *
 * @example withFlagLimit(undefined, { rpm: 500 }, "openai:gpt-4o-mini") // { "openai:gpt-4o-mini": { rpm: 500 } }
 */
export function withFlagLimit(
  limits: RateLimits | undefined,
  flag: RateLimit | undefined,
  model: string | undefined,
): RateLimits | undefined {
  if (!flag || (flag.rpm === undefined && flag.tpm === undefined)) return limits;
  const key = model ?? "*";
  return { ...limits, [key]: { ...limits?.[key], ...definedOf(flag) } };
}

function definedOf(limit: RateLimit): RateLimit {
  return Object.fromEntries(Object.entries(limit).filter(([, v]) => v !== undefined));
}

/**
 * Rate-limit figures of a run's model calls to one endpoint: requests sent, those that waited on
 * the endpoint's budget (throttled), 429/529 answers received, the time requests spent waiting
 * (summed over requests, ms), and the requests waiting on it now (as the run's processes last
 * recorded within a few seconds; 0 once none is executing).
 */
export interface RateWaits {
  endpoint: string;
  requests: number;
  throttled: number;
  rejected: number;
  waitMs: number;
  waiting?: number;
}
