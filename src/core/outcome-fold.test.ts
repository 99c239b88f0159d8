import { describe, expect, it } from "vitest";
import { meanAndStderr, reduceEpochs, type UsageTotal } from "./aggregate.js";
import { keyString, compareKeys } from "./keys.js";
import { OutcomeFold, type FoldedAttempt } from "./outcome-fold.js";
import { selectOutcomes } from "./outcomes.js";
import type { Reducer, Usage } from "./types.js";

/** The figures by definition, the slow way: sort, select, group, reduce, add. */
function reference(
  attempts: readonly FoldedAttempt[],
  fingerprints: ReadonlyMap<string, string>,
  scorers: readonly string[],
  reducer: Reducer,
) {
  const outcomes = selectOutcomes(attempts, fingerprints).sort(compareKeys);
  const metrics = scorers.map((scorer) => {
    const bySample = new Map<string, number[]>();
    for (const o of outcomes.filter((o) => o.status === "scored")) {
      const value = o.scores.find((s) => s.scorer === scorer)?.value;
      if (value === undefined || value === null) continue;
      bySample.set(o.sampleId, [...(bySample.get(o.sampleId) ?? []), value]);
    }
    const perSample = [...bySample.values()].map((values) => reduceEpochs(values, reducer));
    return { scorer, ...meanAndStderr(perSample), samples: perSample.length };
  });
  return { outcomes, metrics };
}

function usageOf(items: readonly { usage: Usage | null }[]): UsageTotal {
  const total = { attempts: 0, inputTokens: 0, outputTokens: 0, costUsd: 0 };
  for (const { usage } of items) {
    total.attempts++;
    total.inputTokens += usage?.inputTokens ?? 0;
    total.outputTokens += usage?.outputTokens ?? 0;
    total.costUsd += usage?.costUsd ?? 0;
  }
  return total;
}

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
  ])("matches the figures computed by definition, bit for bit (seed %i, %s)", (seed, reducer) => {
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

    const { outcomes, metrics } = reference(attempts, fingerprints, ["a", "b", "missing"], reducer);
    expect(folded.metrics).toEqual(metrics);
    expect(folded.scored).toBe(outcomes.filter((o) => o.status === "scored").length);
    expect(folded.errored).toBe(outcomes.filter((o) => o.status === "error").length);
    expect(folded.totalSpent).toEqual(
      usageOf(attempts.filter((a) => a.provenance.kind === "executed")),
    );
    expect(folded.spentNow).toEqual(
      usageOf(attempts.filter((a) => isNow(a) && a.provenance.kind === "executed")),
    );
    expect(folded.reused).toEqual(usageOf(outcomes.filter((o) => !isNow(o))));
    expect(folded.executedNow).toBe(attempts.filter(isNow).length);
  });

  it("reduces epochs per sample, then takes mean and standard error over samples", () => {
    const at = (sampleId: string, epoch: number, value: number): FoldedAttempt => ({
      ...history(1)[0]!,
      sampleId,
      epoch,
      attempt: 1,
      status: "scored",
      fingerprint: "fp",
      scores: [{ scorer: "s", value }],
    });
    const fold = new OutcomeFold({
      fingerprintOf: () => "fp",
      scorers: ["s", "t"],
      reducer: "mean",
      isNow: () => false,
    });
    for (const a of [at("a", 1, 1), at("a", 2, 0), at("b", 1, 1), at("b", 2, 1)]) fold.add(a);
    const { metrics } = fold.finish();
    expect(metrics[0]).toMatchObject({ scorer: "s", mean: 0.75, samples: 2 });
    expect(metrics[0]!.stderr).toBeCloseTo(Math.sqrt(0.125 / 2), 12);
    // A scorer that scored nothing has no mean, not a mean of 0.
    expect(metrics[1]).toEqual({ scorer: "t", mean: null, stderr: null, samples: 0 });
  });

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
