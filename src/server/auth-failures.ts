/** Failed bearer-token attempts one client address may make per window before it must wait. */
const MAX_FAILURES = 10;
const WINDOW_MS = 60_000;
/** Addresses remembered at most: enough for a crowd, small enough to never matter in memory. */
const MAX_ADDRESSES = 10_000;

interface Entry {
  failures: number;
  windowEnds: number;
}

export interface AuthFailuresOptions {
  maxFailures?: number;
  windowMs?: number;
  maxAddresses?: number;
  now?: () => number;
}

/**
 * Failed token attempts per client address, so a guesser is slowed to `maxFailures` tries per
 * window: past that, its address waits until the window ends (`retryAfterMs`), whatever it
 * presents. A success clears the address. Memory is bounded: expired windows are dropped, and
 * past `maxAddresses` the oldest addresses.
 *
 * @example
 * if (failures.retryAfterMs(ip) > 0) return tooMany();
 * if (!valid) failures.record(ip); else failures.clear(ip);
 */
export class AuthFailures {
  readonly #byAddress = new Map<string, Entry>();
  readonly #maxFailures: number;
  readonly #windowMs: number;
  readonly #maxAddresses: number;
  readonly #now: () => number;

  constructor(options: AuthFailuresOptions = {}) {
    this.#maxFailures = options.maxFailures ?? MAX_FAILURES;
    this.#windowMs = options.windowMs ?? WINDOW_MS;
    this.#maxAddresses = options.maxAddresses ?? MAX_ADDRESSES;
    this.#now = options.now ?? Date.now;
  }

  /** Addresses remembered right now. */
  get size(): number {
    return this.#byAddress.size;
  }

  /** How long `address` must wait before it may try again; 0: it may now. */
  retryAfterMs(address: string): number {
    const entry = this.#current(address);
    if (!entry || entry.failures < this.#maxFailures) return 0;
    return entry.windowEnds - this.#now();
  }

  record(address: string): void {
    const entry = this.#current(address);
    if (entry) {
      entry.failures++;
      return;
    }
    this.#makeRoom();
    this.#byAddress.set(address, { failures: 1, windowEnds: this.#now() + this.#windowMs });
  }

  clear(address: string): void {
    this.#byAddress.delete(address);
  }

  #current(address: string): Entry | undefined {
    const entry = this.#byAddress.get(address);
    if (entry && entry.windowEnds <= this.#now()) {
      this.#byAddress.delete(address);
      return undefined;
    }
    return entry;
  }

  /** Windows start in insertion order and all last as long, so the expired ones come first. */
  #makeRoom(): void {
    const now = this.#now();
    for (const [address, entry] of this.#byAddress) {
      if (entry.windowEnds > now && this.#byAddress.size < this.#maxAddresses) break;
      this.#byAddress.delete(address);
    }
  }
}
