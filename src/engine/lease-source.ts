import { isStetError } from "../core/errors.js";
import type { Key } from "../core/types.js";
import { requireLeases, type Store } from "../store/types.js";
import { hostId, pidAlive } from "./owner.js";

/**
 * Where an execution's keys come from. A run executed by one process takes its plan's keys; a
 * distributed run's worker takes keys leased to it in the store (`LeaseSource`).
 */
export interface KeySource {
  /**
   * The next key to execute, or undefined when none is left for this process (or `halted()` says
   * the execution stops). May wait: for a claim, or for keys other workers hold. A key it gives
   * is dispatched, or given back through `done(key, "abandoned")`.
   */
  next(halted: () => boolean): Key | undefined | Promise<Key | undefined>;
  /**
   * The key's execution ended: with its final outcome, which `settle` says is an error (its lease
   * ends with it), or abandoned by a stop (its lease is released when the worker leaves).
   */
  done(key: Key, end: "scored" | "errored" | "abandoned"): Promise<void>;
  /** Keys of the run without an outcome, whoever holds them, as last seen; undefined: unknown. */
  open?(): number | undefined;
  /**
   * Its keys are shared with other processes (a distributed run's leases): any of them may have
   * been begun by another, so each key's open journal entries are read as it is taken. Absent:
   * the run's own keys (a plan's, or its snapshot's pages), whose open entries a resume reads once.
   */
  readonly shared?: boolean;
}

/**
 * The plan's keys, in order: what a run owned by one process executes. Each key is read from the
 * list as it is taken (a `KeyList` makes it then).
 */
export function planSource(keys: Pick<readonly Key[], "length" | "at">): KeySource {
  let next = 0;
  return {
    next: (halted) => (next < keys.length && !halted() ? keys.at(next++) : undefined),
    done: async () => {},
  };
}

export interface LeaseSourceOptions {
  store: Store;
  runId: string;
  /** The worker's token (`registerWorker`). */
  token: string;
  /** Keys a claim asks for: the worker's concurrency, so claims never limit its throughput. */
  batch: number;
  /** How long to wait before claiming again while other workers hold every open key. */
  pollMs: number;
  /** Called after the first claim with how long it took and how many keys it got. */
  onFirstClaim?: (ms: number, keys: number) => void;
  /**
   * Makes each claimed batch the keys the worker executes (in the same order): a worker whose
   * plan lists no sample gives them their records and places (`LeasedSnapshot.locate`).
   */
  locate?: (keys: readonly Key[]) => Promise<Key[]>;
}

/**
 * The keys of a distributed run, leased to this worker a batch at a time (`claimLeases`: one
 * statement per batch). A batch is claimed when the worker's buffer runs low, before it is empty,
 * so a slot that frees finds its next key at once. When nothing is claimable but other workers
 * hold open keys, it waits for them: their leases end with their outcomes, or expire (a worker on
 * this host whose pid is gone is expired at once, `expireWorker`) and are claimed here. It says
 * "none left" only once every open key of the run is this worker's own.
 *
 * @example const source = new LeaseSource({ store, runId, token, batch: 8, pollMs: 500 });
 */
export class LeaseSource implements KeySource {
  readonly shared = true;
  #buffer: Key[] = [];
  /** Keys leased to this worker whose execution has not ended. */
  #held = 0;
  /** Keys whose execution ended in an error whose lease could not be settled (see `done`). */
  #unsettled = 0;
  #claiming: Promise<void> | null = null;
  #exhausted = false;
  #claimed = false;
  #open: number | undefined;
  /** When the open keys were last counted (`performance.now()`). */
  #countedAt = -Infinity;
  readonly #options: LeaseSourceOptions;

  constructor(options: LeaseSourceOptions) {
    this.#options = options;
  }

  next(halted: () => boolean): Key | undefined | Promise<Key | undefined> {
    // A buffered key is given at once (no await): the engine's dispatch checks stay exact.
    const key = this.#take(halted);
    return key === null ? this.#wait(halted) : key;
  }

  /** The next buffered key; undefined when none is left or `halted`; null when a claim is due. */
  #take(halted: () => boolean): Key | undefined | null {
    if (halted()) return undefined;
    const key = this.#buffer.shift();
    if (key) {
      if (this.#buffer.length < this.#options.batch / 2) void this.#claimAhead();
      return key;
    }
    return this.#exhausted ? undefined : null;
  }

  async #wait(halted: () => boolean): Promise<Key | undefined> {
    for (;;) {
      await this.#claimOnce(halted);
      const key = this.#take(halted);
      if (key !== null) return key;
    }
  }

  async done(key: Key, end: "scored" | "errored" | "abandoned"): Promise<void> {
    this.#held--;
    if (end !== "errored") return;
    const { store, runId, token } = this.#options;
    try {
      await withRetries(() => requireLeases(store).settle(runId, token, [key]));
    } catch (error) {
      // The lease stays open, this worker's until it leaves (then claimable again): no other
      // worker holds it, so it is not waited for.
      this.#unsettled++;
      throw error;
    }
  }

  open(): number | undefined {
    return this.#open;
  }

  /**
   * Claims nothing more, and waits for a claim in flight (one ahead of need may still be running
   * when the execution stops). Called before the worker leaves: a claim that committed after the
   * leave released its leases would hold keys no process executes until the lease expires, and
   * the run could not be closed meanwhile.
   */
  async close(): Promise<void> {
    this.#exhausted = true;
    await this.#claiming?.catch(() => {});
  }

  /** A claim in the background; an error is left for the next claim that waits to meet. */
  async #claimAhead(): Promise<void> {
    if (this.#claiming || this.#exhausted) return;
    await this.#claimOnce(() => false, true).catch(() => {});
  }

  #claimOnce(stopped: () => boolean, ahead = false): Promise<void> {
    this.#claiming ??= this.#claim(stopped, ahead).finally(() => {
      this.#claiming = null;
    });
    return this.#claiming;
  }

  async #claim(stopped: () => boolean, ahead: boolean): Promise<void> {
    const { store, runId, token, batch } = this.#options;
    const t0 = performance.now();
    const limit = Math.max(1, batch - this.#buffer.length);
    // The open keys are counted for the progress line at most once a second (a count reads every
    // open lease); a claim that comes back short counts them anyway (see LeaseStore.claim).
    const count = t0 - this.#countedAt >= COUNT_EVERY_MS;
    const claim = await withRetries(() =>
      requireLeases(store).claim(runId, token, limit, { count }),
    );
    const { locate } = this.#options;
    const keys = locate ? await withRetries(() => locate(claim.keys)) : claim.keys;
    if (!this.#claimed) {
      this.#claimed = true;
      this.#options.onFirstClaim?.(performance.now() - t0, keys.length);
    }
    if (claim.open !== undefined) {
      this.#open = claim.open;
      this.#countedAt = t0;
    }
    this.#held += keys.length;
    this.#buffer.push(...keys);
    if (keys.length > 0 || ahead) return;
    // Nothing claimable. Every open key is this worker's own (executing, or unsettled): none
    // left for it.
    if ((claim.open ?? 0) - this.#held - this.#unsettled <= 0) {
      this.#exhausted = true;
      return;
    }
    // Other workers hold the rest: a dead one's leases are claimable once expired.
    if ((await expireDeadWorkers(store, runId, token)) > 0 || stopped()) return;
    await new Promise((resolve) => setTimeout(resolve, this.#options.pollMs));
  }
}

const CLAIM_RETRY_DELAYS_MS = [100, 300, 1_000, 2_000];
/** How often a worker claiming full batches counts the run's open keys. */
const COUNT_EVERY_MS = 1_000;

/**
 * A claim, a settle or a `locate` that failed in the store (a dropped connection, a busy lock) is
 * tried again.
 */
async function withRetries<T>(claim: () => Promise<T>): Promise<T> {
  for (let i = 0; ; i++) {
    try {
      return await claim();
    } catch (error) {
      if (!isStetError(error, "E_STORE") || i >= CLAIM_RETRY_DELAYS_MS.length) throw error;
      await new Promise((resolve) => setTimeout(resolve, CLAIM_RETRY_DELAYS_MS[i]));
    }
  }
}

/**
 * Expires the leases of the run's workers on this host whose pid is gone (another host's expire
 * by themselves, their lease time after their last heartbeat), but `except`'s. How many leases
 * it freed.
 *
 * @example await expireDeadWorkers(store, "r_abc") // 8
 */
export async function expireDeadWorkers(
  store: Store,
  runId: string,
  except?: string,
): Promise<number> {
  const leases = requireLeases(store);
  const host = hostId();
  let freed = 0;
  for (const worker of await leases.list(runId)) {
    if (worker.state !== "active" || worker.token === except || worker.host !== host) continue;
    if (!pidAlive(worker.pid)) freed += await leases.expire(runId, worker.token);
  }
  return freed;
}
