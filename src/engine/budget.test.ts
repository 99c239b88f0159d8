import { describe, expect, it } from "vitest";
import { Budget, budgetNote, usd } from "./budget.js";

/** A budget that knows the run's stored rows spent `costUsd` over `pricedAttempts` priced attempts. */
function knowing(maxCostUsd: number, costUsd: number, pricedAttempts: number): Budget {
  const budget = new Budget({ maxCostUsd });
  budget.know({ costUsd, pricedAttempts });
  return budget;
}

describe("Budget: the spend cap's dispatch rule", () => {
  it.each([
    // spent 0.20 over 20 attempts: mean 0.01; the new key counts among those in flight
    [0.5, { costUsd: 0.2, priced: 20 }, 0, "dispatch"],
    [0.5, { costUsd: 0.2, priced: 20 }, 29, "dispatch"], // 0.20 + 0.01 × 30 = 0.50: fits
    [0.5, { costUsd: 0.2, priced: 20 }, 30, "stop"], // 0.20 + 0.01 × 31 > 0.50
    [0.5, { costUsd: 0.5, priced: 50 }, 0, "stop"], // at the cap
    [0.5, { costUsd: 0.7, priced: 70 }, 0, "stop"], // past it (a lower cap on resume)
    [0.5, { costUsd: 0.49, priced: 49 }, 0, "dispatch"], // 0.49 + 0.01 lands on the cap
    [0.5, { costUsd: 0, priced: 0 }, 7, "dispatch"], // no mean yet: only spent counts
    [0.5, { costUsd: 0, priced: 10 }, 100, "dispatch"], // a free model never stops
  ] as const)("cap %d, stored %j, %d in flight: %s", (maxCostUsd, stored, inflight, verdict) => {
    expect(knowing(maxCostUsd, stored.costUsd, stored.priced).verdict(inflight)).toBe(verdict);
  });

  it("holds the stored spend it was told, never a tally of what it observed", () => {
    const budget = knowing(1, 0.1, 10);
    expect(budget.verdict(8)).toBe("dispatch"); // 0.1 + 0.01 × 9
    const attempt = {
      sampleId: "q",
      status: "scored" as const,
      usage: { inputTokens: 10, outputTokens: 5, costUsd: 0.05 },
    };
    // This process's commits change nothing until the store is read again …
    for (let i = 0; i < 10; i++) budget.observe(attempt);
    expect(budget.spentUsd).toBe(0.1);
    // … and a read replaces the spend: the rows' sum, theirs and every other worker's.
    budget.know({ costUsd: 0.6, pricedAttempts: 20 }); // mean now 0.03
    expect(budget.spentUsd).toBe(0.6);
    expect(budget.verdict(12)).toBe("dispatch"); // 0.6 + 0.03 × 13 = 0.99
    expect(budget.verdict(13)).toBe("stop"); // 0.6 + 0.03 × 14 = 1.02
    expect(budget.note()).toBe("budget: spent $0.60 of the $1.00 cap");
    budget.know({ costUsd: 0.6, pricedAttempts: 20 });
    expect(budget.spentUsd).toBe(0.6);
  });

  it("probes with one key until the run has a priced attempt or this invocation committed one", () => {
    expect(knowing(1, 0, 0).probing).toBe(true);
    expect(knowing(1, 0.2, 3).probing).toBe(false);
    const budget = knowing(1, 0, 0);
    budget.observe({ sampleId: "q", status: "error", usage: null });
    expect(budget.probing).toBe(false);
  });

  it("leaves attempts without a known cost out of the mean, and warns once about them", () => {
    const budget = knowing(0.5, 0.1, 10);
    const unpriced = {
      sampleId: "q7",
      status: "scored" as const,
      usage: { inputTokens: 9, outputTokens: 6 },
    };
    expect(budget.observe(unpriced)).toMatch(
      /^the spend cap \(\$0\.50\) cannot count all of this run's spend: sample q7's attempt used 15 tokens at no known price/,
    );
    expect(budget.observe(unpriced)).toBeUndefined();
    expect(budget.spentUsd).toBeCloseTo(0.1, 12);
    expect(budget.verdict(39)).toBe("dispatch"); // mean still 0.01: 0.1 + 0.01 × 40 = 0.5
    expect(budget.verdict(40)).toBe("stop");
  });

  it("does not warn about an error that spent nothing", () => {
    const budget = knowing(0.5, 0, 0);
    expect(budget.observe({ sampleId: "q", status: "error", usage: null })).toBeUndefined();
    expect(budget.observe({ sampleId: "q", status: "scored", usage: null })).toMatch(
      /reported no cost/,
    );
  });

  it("says a stop at the cap with the spend it is given", () => {
    expect(budgetNote(0.994, 0.9)).toBe("budget: spent $0.9940 of the $0.90 cap");
    expect(budgetNote(1.06, 0.9)).toBe("budget: spent $1.06 of the $0.90 cap");
  });

  it.each([
    [0.5, "$0.50"],
    [0.0123, "$0.0123"],
    [12.345, "$12.35"],
    [0, "$0.00"],
  ])("usd(%d) is %s", (amount, text) => {
    expect(usd(amount)).toBe(text);
  });
});
