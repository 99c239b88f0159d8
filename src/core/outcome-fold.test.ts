import { describe, expect, it } from "vitest";
import { aggregate, totalUsage } from "./aggregate.js";
import { keyString, compareKeys } from "./keys.js";
import { OutcomeFold, type FoldedAttempt } from "./outcome-fold.js";
import { selectOutcomes } from "./outcomes.js";
import type { Reducer } from "./types.js";

/** A pseudo-random run history: errors, retries, changed samples, imports, fractional costs. */
function history(seed: number): FoldedAttempt[] {
  let x = seed;
  const rnd = () => (x = (x * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
  const out: FoldedAttempt[] = [];
  for (let s = 0; s < 60; s++) {
    for (let epoch = 1; epoch <= 3; epoch++) {
      const attempts = 1 + Math.floor(rnd() * 3);
      for (let attempt = 1; attempt <= attempts; attempt++) {
        const scored = rnd() > 0.3;
        out.push({
          sampleId: `s${String(s).padStart(2, "0")}`,
          epoch,
          attempt,
          status: scored ? "scored" : "error",
          fingerprint: rnd() > 0.1 ? "current" : "old",
          scores: scored
            ? [
                { scorer: "a", value: Math.round(rnd() * 7) / 7 },
                { scorer: "b", value: rnd() > 0.5 ? 1 : 0 },
              ]
            : [],
          usage: rnd() > 0.2 ? { inputTokens: 10, outputTokens: 3, costUsd: rnd() / 1000 } : null,
          error: scored ? null : { type: rnd() > 0.5 ? "provider" : "timeout" },
          provenance: rnd() > 0.2 ? { kind: "executed" } : { kind: "imported", source: "sha256:x" },
        });
      }
    }
  }
  return out.sort((p, q) => compareKeys(p, q) || p.attempt - q.attempt);
}

describe("OutcomeFold", () => {
  it.each<[number, Reducer]>([
    [1, "mean"],
    [2, "max"],
    [3, "pass@2"],
    [4, "mode"],
  ])(
    "matches selectOutcomes + aggregate + totalUsage bit for bit (seed %i, %s)",
    (seed, reducer) => {
      const attempts = history(seed);
      const fingerprints = new Map(attempts.map((a) => [a.sampleId, "current"]));
      const now = new Set(
        attempts.filter((_, i) => i % 3 === 0).map((a) => `${keyString(a)}#${a.attempt}`),
      );
      const isNow = (a: FoldedAttempt) => now.has(`${keyString(a)}#${a.attempt}`);

      const fold = new OutcomeFold({
        fingerprintOf: (id) => fingerprints.get(id),
        scorers: ["a", "b", "missing"],
        reducer,
        isNow,
      });
      for (const a of attempts) fold.add(a);
      const folded = fold.finish();

      const outcomes = selectOutcomes(attempts, fingerprints);
      expect(folded.metrics).toEqual(aggregate(outcomes, ["a", "b", "missing"], reducer));
      expect(folded.scored).toBe(outcomes.filter((o) => o.status === "scored").length);
      expect(folded.errored).toBe(outcomes.filter((o) => o.status === "error").length);
      expect(folded.totalSpent).toEqual(
        totalUsage(attempts.filter((a) => a.provenance.kind === "executed")),
      );
      expect(folded.spentNow).toEqual(
        totalUsage(attempts.filter((a) => isNow(a) && a.provenance.kind === "executed")),
      );
      expect(folded.reused).toEqual(totalUsage(outcomes.filter((o) => !isNow(o))));
      expect(folded.executedNow).toBe(attempts.filter(isNow).length);
    },
  );

  it("refuses attempts out of key order", () => {
    const attempts = history(5);
    const [first, last] = [attempts[0]!, attempts.at(-1)!];
    const fold = new OutcomeFold({
      fingerprintOf: () => undefined,
      scorers: [],
      reducer: "mean",
      isNow: () => false,
    });
    fold.add(last);
    expect(() => fold.add(first)).toThrow(/key order/);
  });
});
