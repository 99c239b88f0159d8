import { isStetError, StetError } from "../core/errors.js";
import type { Key } from "../core/types.js";
import { AttemptAborted } from "./attempt-signal.js";
import { drain } from "./drain.js";
import type { KeyEnd } from "./key-runner.js";
import type { KeySource } from "./lease-source.js";
import type { SpendGate } from "./spend-gate.js";
import type { StopControl } from "./stop-control.js";

export interface WorkerPoolParts<U> {
  keys: KeySource;
  concurrency: number;
  stops: StopControl;
  gate: SpendGate | undefined;
  /** How many attempts are in flight (the spend cap's dispatch rule counts them). */
  inflight: () => number;
  /** The writer's failure, once its commits gave up (`AttemptWriter.failure`). */
  writeFailure: () => StetError | null;
  /** Executes a key to its end (`KeyRunner.run`). */
  runKey: (key: Key) => Promise<KeyEnd>;
  /** Scores a stored attempt again and counts it, before any key executes. */
  score: (unit: U) => Promise<void>;
}

/**
 * The pool of an execution: stored attempts to score again first, then the keys of its source,
 * `concurrency` at a time (under a spend cap with no known cost yet, the first key alone). A stop
 * ends dispatching: a key taken from the source and not started is given back to it
 * (`done(key, "abandoned")`); one in flight finishes, or is abandoned when the stop aborts it.
 *
 * An unexpected error (a bug, an event listener that threw) is the execution's `fault`: nothing
 * more is dispatched and what is in flight is aborted; the caller throws it once the writer drained.
 *
 * @example const pool = new WorkerPool(parts); await pool.run(units); if (pool.fault) throw pool.fault.error;
 */
export class WorkerPool<U> {
  fault: { error: unknown } | undefined;
  /** The store failed to give a key, or the run's spend (after its retries). */
  claimFailure: StetError | undefined;
  readonly #parts: WorkerPoolParts<U>;

  constructor(parts: WorkerPoolParts<U>) {
    this.#parts = parts;
  }

  /**
   * Scores `units`, then executes the source's keys, until none is left or the execution stops.
   * Units that come from a store (a rescore's pages) are taken one at a time as slots free up.
   */
  async run(units: Iterable<U> | AsyncIterable<U>): Promise<void> {
    const { gate, concurrency } = this.#parts;
    // Without the run's spend, the cap cannot be held: nothing is dispatched.
    await gate?.start().catch(this.#storeFailed);
    const pending =
      Symbol.asyncIterator in units ? units[Symbol.asyncIterator]() : units[Symbol.iterator]();
    await drain(
      async () => {
        // A judge's scorings count against the cap too.
        if (gate) await gate.look();
        const next = await pending.next();
        return next.done ? undefined : next.value;
      },
      concurrency,
      this.#stopped,
      async (unit, go) => {
        if (!go) return;
        try {
          await this.#parts.score(unit);
        } catch (error) {
          this.#stopOn(error);
        }
      },
    );
    // Under a cap with no known cost yet, the first key goes alone: its cost is what the rest
    // are expected to cost.
    if (gate?.probing) await drain(this.#next, 1, this.#stopped, this.#dispatch, 1);
    await drain(this.#next, concurrency, this.#stopped, this.#dispatch);
  }

  readonly #halted = (): boolean => this.#parts.stops.reason !== null || this.fault !== undefined;

  readonly #stopped = (): boolean =>
    this.#halted() ||
    (this.#parts.gate !== undefined && this.#parts.gate.over(this.#parts.inflight()));

  readonly #next = async (): Promise<Key | undefined> => {
    // Under a cap, a dispatch waits for a look at what the run's rows spent up to now.
    if (this.#parts.gate) await this.#parts.gate.look();
    try {
      const key = this.#parts.keys.next(this.#halted);
      return key instanceof Promise ? await key : key;
    } catch (error) {
      // The store failed to give a key (after its retries): stop as a store failure does.
      this.#storeFailed(error);
      return undefined;
    }
  };

  /** A key that a stop kept from dispatching goes back to its source. */
  readonly #dispatch = (key: Key, go: boolean): Promise<void> =>
    go ? this.#work(key) : this.#parts.keys.done(key, "abandoned");

  async #work(key: Key): Promise<void> {
    const { keys, stops } = this.#parts;
    let end: KeyEnd = "abandoned";
    try {
      end = await this.#parts.runKey(key);
    } catch (error) {
      this.#stopOn(error);
    }
    try {
      // A worker's errored key settles its lease (the outcome is final); unless fenced meanwhile.
      await keys.done(key, this.#parts.writeFailure() ? "abandoned" : end);
    } catch (error) {
      // Its lease was taken: this worker was presumed dead. Another failure leaves the lease to
      // end when the worker leaves (the key is then claimable, its error attempt stored).
      if (isStetError(error, "E_FENCED")) stops.stop("ownership-lost", true, error.message);
    }
  }

  /**
   * What a dispatch threw: an abort by the run is the stop's; a writer that gave up stops the
   * execution (fenced out, or the store unwritable); anything else is the execution's fault,
   * thrown once every slot ended and the writer drained, so the caller releases the run with no
   * attempt of this process still running or committing.
   */
  #stopOn(error: unknown): void {
    if (error instanceof AttemptAborted) return;
    const failure = this.#parts.writeFailure();
    if (failure) {
      const fencedOut = failure.code === "E_FENCED";
      this.#parts.stops.stop(
        fencedOut ? "ownership-lost" : "store-unwritable",
        false,
        failure.message,
      );
      return;
    }
    if (this.fault) return;
    this.fault = { error };
    this.#parts.stops.abortInflight();
  }

  readonly #storeFailed = (error: unknown): void => {
    const message = error instanceof Error ? error.message : String(error);
    this.#parts.stops.stop("store-unwritable", false, message);
    this.claimFailure ??= error instanceof StetError ? error : new StetError("E_STORE", message);
  };
}
