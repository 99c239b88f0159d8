import { keyString } from "../core/keys.js";
import { formatUsd } from "../core/money.js";
import type { Attempt } from "../core/types.js";

/** A cap on a run's total spend, and what the run had spent before this invocation. */
export interface SpendCap {
  /** The cap on the total spent on the run (every executed attempt, all invocations), USD. */
  maxCostUsd: number;
  /** The run's executed attempts stored before this invocation: their known cost and how many had one. */
  before: { costUsd: number; priced: number };
  /**
   * For a worker of a distributed run: the store's attempt-feed cursor read before `before` was,
   * so attempts committed after it are counted as other workers' spend (a few twice, never none).
   */
  feedCursor?: number;
}

/** What the engine does with the next key: dispatch it, or stop dispatching. */
export type BudgetVerdict = "dispatch" | "stop";

/**
 * The spend cap's dispatch rule. Before a key is dispatched, the run's total spent (stored
 * before this invocation + committed by it) plus what the keys in flight are expected to spend
 * (the run's mean cost per priced attempt × their number, the new key counted among them) is
 * compared with the cap: over it, dispatching stops. Because a key is only dispatched while
 * spent < cap, the total can exceed the cap by at most what the keys in flight at the last
 * dispatch cost.
 *
 * Before any attempt of the run has a known cost, there is no mean to expect anything with: the
 * first key of the invocation is then dispatched alone (`probing`), and the rest only once it is
 * committed. Attempts without a known cost (a model with no price) count 0 and are left out of
 * the mean; the cap cannot see them (`observe` says so once).
 *
 * @example
 * const budget = new Budget({ maxCostUsd: 0.5, before: { costUsd: 0.2, priced: 20 } });
 * budget.verdict(3); // "dispatch": 0.2 + 0.01 × 4 ≤ 0.5
 */
export class Budget {
  readonly maxCostUsd: number;
  #spentUsd: number;
  #priced: number;
  #committed = 0;
  #warned = false;
  /** This process's attempts, told apart from other workers' in `observeElsewhere`. */
  readonly #own = new Set<string>();

  constructor(cap: SpendCap) {
    this.maxCostUsd = cap.maxCostUsd;
    this.#spentUsd = cap.before.costUsd;
    this.#priced = cap.before.priced;
  }

  /** The total known spend on the run: stored before this invocation plus committed by it. */
  get spentUsd(): number {
    return this.#spentUsd;
  }

  /** True while no attempt of the run has a known cost and this invocation committed none. */
  get probing(): boolean {
    return this.#priced === 0 && this.#committed === 0;
  }

  /**
   * Counts a committed attempt. Returns a warning the first time an attempt that spent
   * something the cap cannot count is seen (tokens, or a scored solve, without a known cost).
   */
  observe(
    attempt: Pick<Attempt, "usage" | "status" | "sampleId" | "epoch" | "attempt">,
  ): string | undefined {
    this.#committed++;
    this.#own.add(`${keyString(attempt)}#${attempt.attempt}`);
    const cost = attempt.usage?.costUsd;
    if (typeof cost === "number") {
      this.#spentUsd += cost;
      this.#priced++;
      return undefined;
    }
    const tokens = (attempt.usage?.inputTokens ?? 0) + (attempt.usage?.outputTokens ?? 0);
    if (this.#warned || (tokens === 0 && attempt.status !== "scored")) return undefined;
    this.#warned = true;
    const what =
      tokens > 0
        ? `used ${tokens} tokens at no known price (the model has none: give the solver \`prices\`)`
        : "reported no cost";
    return (
      `the spend cap (${usd(this.maxCostUsd)}) cannot count all of this run's spend: ` +
      `sample ${attempt.sampleId}'s attempt ${what}; only attempts with a known cost count against the cap`
    );
  }

  /**
   * Counts spend that is not an attempt's (a scoring's judge): on the run's total, but not in the
   * mean cost of an attempt.
   */
  observeSpend(costUsd: number): void {
    this.#spentUsd += costUsd;
  }

  /**
   * Counts an attempt of the run committed by another process (a distributed run's other
   * workers), unless it is one this budget observed: their spend is on the same cap.
   */
  observeElsewhere(
    attempt: Pick<Attempt, "usage" | "sampleId" | "epoch" | "attempt" | "provenance">,
  ): void {
    if (this.#own.has(`${keyString(attempt)}#${attempt.attempt}`)) return;
    const cost = attempt.usage?.costUsd;
    if (attempt.provenance.kind !== "executed" || typeof cost !== "number") return;
    this.#spentUsd += cost;
    this.#priced++;
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

  /** The note a run stopped by its cap is released with. */
  note(): string {
    return `budget: spent ${usd(this.#spentUsd)} of the ${usd(this.maxCostUsd)} cap`;
  }
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
