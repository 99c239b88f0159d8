import type { Attempt } from "../core/types.js";
import type { Store } from "../store/types.js";
import { Budget, type SpendCap } from "./budget.js";
import type { StopControl } from "./stop-control.js";
import { followStoredSpend, type StoredSpendFollower } from "./stored-spend.js";

/**
 * The spend cap at the pool's door: the run's stored spend, followed from the store
 * (`followStoredSpend`), held against the cap by `Budget`'s dispatch rule. A dispatch that would
 * not fit stops the execution (reason `budget`) without aborting what is in flight.
 *
 * @example const gate = new SpendGate(store, run.id, { maxCostUsd: 1 }, stops); await gate.start();
 */
export class SpendGate {
  readonly budget: Budget;
  readonly #spend: StoredSpendFollower;
  readonly #stops: StopControl;

  constructor(store: Pick<Store, "reads">, runId: string, cap: SpendCap, stops: StopControl) {
    this.budget = new Budget(cap);
    this.#spend = followStoredSpend(store, runId, this.budget);
    this.#stops = stops;
  }

  /** No priced attempt is known yet: the first key goes alone, its cost the others' estimate. */
  get probing(): boolean {
    return this.budget.probing;
  }

  /** The first read of the run's spend; throws when the store cannot be read. */
  start(): Promise<void> {
    return this.#spend.start();
  }

  /** A read of what the run's rows spent up to now (a failed read keeps the last one's). */
  look(): Promise<void> {
    return this.#spend.look();
  }

  /** Stops dispatching (reason `budget`) when one more key, beside `inflight` others, would not fit. */
  over(inflight: number): boolean {
    if (this.#stops.reason !== null || this.budget.verdict(inflight) === "dispatch") return false;
    this.#stops.stop("budget", false, `${this.budget.note()}; finishing the samples in flight`);
    return true;
  }

  /** A committed attempt: a warning when it used tokens without a price. */
  observe(attempt: Attempt): string | undefined {
    return this.budget.observe(attempt);
  }
}
