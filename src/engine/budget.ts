import { formatUsd } from "../core/money.js";
import type { Attempt } from "../core/types.js";
import type { StoredSpend } from "../store/types.js";

/** A cap on a run's total spend. */
export interface SpendCap {
  /**
   * The cap on the total spent on the run, USD: what its executed attempts and its scorings (a
   * judge's) cost, over all invocations and all workers, as the store holds them.
   */
  maxCostUsd: number;
}

/** What the engine does with the next key: dispatch it, or stop dispatching. */
export type BudgetVerdict = "dispatch" | "stop";

/**
 * The spend cap's dispatch rule. Before a key is dispatched, the run's total spent, as its stored
 * rows sum it (`know`, kept up to date by `followStoredSpend`), plus what the keys in flight are
 * expected to spend (the run's mean cost per priced attempt × their number, the new key counted
 * among them) is compared with the cap: over it, dispatching stops. Because a key is only
 * dispatched while spent < cap, the total can exceed the cap by at most what the keys in flight
 * at the last dispatch cost.
 *
 * The known spend is never a tally of what this process saw committed: it is what the store's
 * rows add up to at the latest read, so it counts every worker's attempts and scorings once.
 *
 * Before any attempt of the run has a known cost, there is no mean to expect anything with: the
 * first key of the invocation is then dispatched alone (`probing`), and the rest only once it is
 * committed. Attempts without a known cost (a model with no price) count 0 and are left out of
 * the mean; the cap cannot see them (`observe` says so once).
 *
 * @example
 * const budget = new Budget({ maxCostUsd: 0.5 });
 * budget.know({ costUsd: 0.2, pricedAttempts: 20 });
 * budget.verdict(3); // "dispatch": 0.2 + 0.01 × 4 ≤ 0.5
 */
export class Budget {
  readonly maxCostUsd: number;
  #spentUsd = 0;
  #priced = 0;
  #committed = 0;
  #warned = false;

  constructor(cap: SpendCap) {
    this.maxCostUsd = cap.maxCostUsd;
  }

  /** The run's stored spend, as the latest read of its rows sums it. */
  know(spent: Pick<StoredSpend, "costUsd" | "pricedAttempts">): void {
    this.#spentUsd = spent.costUsd;
    this.#priced = spent.pricedAttempts;
  }

  /** The total known spend on the run: its stored rows' at the latest read. */
  get spentUsd(): number {
    return this.#spentUsd;
  }

  /** True while no attempt of the run has a known cost and this invocation committed none. */
  get probing(): boolean {
    return this.#priced === 0 && this.#committed === 0;
  }

  /**
   * Notes an attempt this process committed (its cost is known once the store is read again).
   * Returns a warning the first time an attempt that spent something the cap cannot count is
   * seen (tokens, or a scored solve, without a known cost).
   */
  observe(attempt: Pick<Attempt, "usage" | "status" | "sampleId">): string | undefined {
    this.#committed++;
    const usage = attempt.usage;
    if (typeof usage?.costUsd === "number") return undefined;
    const tokens = (usage?.inputTokens ?? 0) + (usage?.outputTokens ?? 0);
    if (this.#warned || (tokens === 0 && attempt.status !== "scored")) return undefined;
    this.#warned = true;
    const what =
      tokens > 0
        ? `used ${tokens} tokens at no known price (the model, or a tier it used such as cached input, has none: give the solver \`prices\`)`
        : "reported no cost";
    return (
      `the spend cap (${usd(this.maxCostUsd)}) cannot count all of this run's spend: ` +
      `sample ${attempt.sampleId}'s attempt ${what}; only attempts with a known cost count against the cap`
    );
  }

  /** Whether one more key may be dispatched while `inflight` others are in flight. */
  verdict(inflight: number): BudgetVerdict {
    const spent = this.#spentUsd;
    if (spent >= this.maxCostUsd) return "stop";
    if (this.#priced === 0) return "dispatch";
    const mean = spent / this.#priced;
    // A sum of cents is not exact in binary: a key that lands on the cap itself still fits.
    return spent + mean * (inflight + 1) <= this.maxCostUsd + 1e-9 ? "dispatch" : "stop";
  }

  /** The note of a stop at the cap, with the spend known now. */
  note(): string {
    return budgetNote(this.#spentUsd, this.maxCostUsd);
  }
}

/**
 * The note a run stopped by its cap is released with, and its report says: what the run spent,
 * as its stored rows sum it, against the cap.
 *
 * @example budgetNote(0.6, 1) // "budget: spent $0.60 of the $1.00 cap"
 */
export function budgetNote(spentUsd: number, maxCostUsd: number): string {
  return `budget: spent ${usd(spentUsd)} of the ${usd(maxCostUsd)} cap`;
}

/**
 * Dollars as a note says them: cents when the amount is whole cents, else as `formatUsd` (so a
 * sub-cent spend is never "$0.0000").
 *
 * @example usd(0.5) // "$0.50"; usd(0.0123) // "$0.0123"; usd(0.00002) // "$0.00002"
 */
export function usd(amount: number): string {
  const cents = amount * 100;
  const whole = Math.abs(cents - Math.round(cents)) < 1e-6;
  return whole ? `$${amount.toFixed(2)}` : formatUsd(amount);
}
