import { describe, expect, it } from "vitest";
import type { ScorerMetrics, UsageTotal } from "./aggregate.js";
import { keyString, compareKeys } from "./keys.js";
import { OutcomeFold, type FoldedAttempt } from "./outcome-fold.js";
import type { Reducer, Usage } from "./types.js";

/**
 * The figures by definition, written out plainly here and sharing no code with the fold: each
 * key's outcome is its latest scored attempt for the sample's current fingerprint, else its
 * latest error; each sample's scored epochs (and scorer errors', whose other scores stand)
 * reduce to one value; the metric is the mean over samples and its standard error (sample
 * standard deviation / √n, 0 for one sample), its sums exact and rounded once.
 */
function reference(
  attempts: readonly FoldedAttempt[],
  fingerprints: ReadonlyMap<string, string>,
  scorers: readonly string[],
  reducer: Reducer,
) {
  const byKey = new Map<string, FoldedAttempt>();
  for (const a of attempts) {
    if (fingerprints.get(a.sampleId) !== a.fingerprint) continue;
    const k = `${a.sampleId}#${a.epoch}`;
    const held = byKey.get(k);
    const better =
      !held || (a.status === held.status ? a.attempt > held.attempt : a.status === "scored");
    if (better) byKey.set(k, a);
  }
  // In key order (sample id by code units, then epoch): the order the sums add in.
  const outcomes = [...byKey.values()].sort((p, q) =>
    p.sampleId === q.sampleId ? p.epoch - q.epoch : p.sampleId < q.sampleId ? -1 : 1,
  );
  const metrics: ScorerMetrics[] = scorers.map((scorer) => {
    const bySample = new Map<string, number[]>();
    for (const o of outcomes) {
      if (o.status !== "scored" && o.error?.type !== "scorer") continue;
      const value = o.scores.find((s) => s.scorer === scorer)?.value;
      if (typeof value !== "number") continue;
      bySample.set(o.sampleId, [...(bySample.get(o.sampleId) ?? []), value]);
    }
    const perSample = [...bySample.values()].map((values) => reduce(values, reducer));
    const n = perSample.length;
    if (n === 0) return { scorer, mean: null, stderr: null, samples: 0 };
    const mean = exactTotal(perSample) / n;
    const stderr = n === 1 ? 0 : Math.sqrt(exactSquares(perSample, mean) / (n - 1) / n);
    return { scorer, mean, stderr, samples: n };
  });
  return { outcomes, metrics };
}

/**
 * Sums are exact, rounded once (so independent of order): each value, a double of this test's
 * magnitudes, is an integer once scaled by 2^200, summed as a BigInt, which `Number` rounds to
 * nearest.
 */
function exactTotal(values: readonly number[]): number {
  let sum = 0n;
  for (const v of values) sum += BigInt(v * 2 ** 200);
  return Number(sum) * 2 ** -200;
}

/** Σ (v − mean)², exact and rounded once, as `exactTotal`. */
function exactSquares(values: readonly number[], mean: number): number {
  let sum = 0n;
  const m = BigInt(mean * 2 ** 200);
  for (const v of values) sum += (BigInt(v * 2 ** 200) - m) ** 2n;
  return Number(sum) * 2 ** -400;
}

function total(values: readonly number[]): number {
  let sum = 0;
  for (const v of values) sum += v;
  return sum;
}

/** One sample's epochs reduced to one value. */
function reduce(values: readonly number[], reducer: Reducer): number {
  if (reducer === "mean") return total(values) / values.length;
  if (reducer === "max") return Math.max(...values);
  if (reducer === "min") return Math.min(...values);
  const count = (v: number) => values.filter((w) => w === v).length;
  // The most frequent value, ties to the larger one.
  if (reducer === "mode") return [...values].sort((p, q) => count(q) - count(p) || q - p)[0]!;
  // pass@k: the chance that k epochs drawn from the n without replacement hold a pass (≥ 1),
  // 1 − C(n − c, k) / C(n, k); with fewer than k epochs, k = n.
  const n = values.length;
  const c = values.filter((v) => v >= 1).length;
  const k = Math.min(Number(reducer.slice("pass@".length)), n);
  return 1 - choose(n - c, k) / choose(n, k);
}

function choose(n: number, k: number): number {
  if (k > n) return 0;
  let result = 1;
  for (let i = 1; i <= k; i++) result = (result * (n - k + i)) / i;
  return result;
}

/**
 * Metrics equal to the reference's. Mean, max and mode reduce with the same operations in the
 * same order, so the figures must be bit for bit the same; pass@k computed the reference's way
 * may differ from the fold's in the last bit, so there they must agree to 12 digits.
 */
function expectMetrics(actual: ScorerMetrics[], expected: ScorerMetrics[], reducer: Reducer) {
  if (!reducer.startsWith("pass@")) return expect(actual).toEqual(expected);
  expect(actual.map((m) => [m.scorer, m.samples])).toEqual(
    expected.map((m) => [m.scorer, m.samples]),
  );
  actual.forEach((m, i) => {
    for (const field of ["mean", "stderr"] as const) {
      const want = expected[i]![field];
      if (want === null) expect(m[field]).toBeNull();
      else expect(m[field]).toBeCloseTo(want, 12);
    }
  });
}

/**
 * Tokens summed; cost the sum of the priced attempts', null when attempts used tokens without a
 * price and the priced ones cost nothing (unknown); attempts with tokens and no cost counted.
 */
function usageOf(items: readonly { usage: Usage | null }[]): UsageTotal {
  const total = {
    attempts: 0,
    inputTokens: 0,
    outputTokens: 0,
    cachedInputTokens: 0,
    cacheWriteTokens: 0,
    reasoningTokens: 0,
    known: [] as number[],
    unpriced: 0,
  };
  for (const { usage } of items) {
    total.attempts++;
    total.inputTokens += usage?.inputTokens ?? 0;
    total.outputTokens += usage?.outputTokens ?? 0;
    total.cachedInputTokens += usage?.cachedInputTokens ?? 0;
    total.cacheWriteTokens += usage?.cacheWriteTokens ?? 0;
    total.reasoningTokens += usage?.reasoningTokens ?? 0;
    if (usage?.costUsd !== undefined) total.known.push(usage.costUsd);
    else if (usage && usage.inputTokens + usage.outputTokens > 0) total.unpriced++;
  }
  const { known: costs, ...rest } = total;
  const known = exactTotal(costs);
  return { ...rest, costUsd: total.unpriced > 0 && known === 0 ? null : known };
}

/**
 * A pseudo-random run history: errors, retries, changed samples, imports, fractional costs, and
 * about one attempt in ten with tokens but no price.
 */
function history(seed: number): FoldedAttempt[] {
  let x = seed;
  const rnd = () => (x = (x * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
  const out: FoldedAttempt[] = [];
  for (let s = 0; s < 60; s++) {
    for (let epoch = 1; epoch <= 3; epoch++) {
      const attempts = 1 + Math.floor(rnd() * 3);
      for (let attempt = 1; attempt <= attempts; attempt++) {
        const scored = rnd() > 0.3;
        const roll = rnd();
        const type = roll > 0.6 ? "provider" : roll > 0.3 ? "timeout" : "scorer";
        // A scorer error keeps the scores that did not throw; "b" threw.
        const a = { scorer: "a", value: Math.round(rnd() * 7) / 7 };
        const b = rnd() > 0.5 ? 1 : 0;
        out.push({
          sampleId: `s${String(s).padStart(2, "0")}`,
          epoch,
          attempt,
          status: scored ? "scored" : "error",
          fingerprint: rnd() > 0.1 ? "current" : "old",
          scores: scored
            ? [a, { scorer: "b", value: b }]
            : type === "scorer"
              ? [a, { scorer: "b", value: null, error: "b threw" }]
              : [],
          usage: rnd() > 0.2 ? usage(rnd() / 1000) : null,
          error: scored ? null : { type, message: `failed s${s}#${epoch}#${attempt}` },
          provenance: rnd() > 0.2 ? { kind: "executed" } : { kind: "imported", source: "sha256:x" },
        });
      }
    }
  }
  return out.sort((p, q) => compareKeys(p, q) || p.attempt - q.attempt);
}

function usage(cost: number): Usage {
  return cost < 0.0001
    ? { inputTokens: 10, outputTokens: 3 }
    : { inputTokens: 10, outputTokens: 3, costUsd: cost };
}

describe("OutcomeFold", () => {
  it.each<[number, Reducer]>([
    [1, "mean"],
    [2, "max"],
    [3, "pass@2"],
    [4, "mode"],
  ])("matches the figures computed by definition (seed %i, %s)", (seed, reducer) => {
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
    expectMetrics(folded.metrics, metrics, reducer);
    expect(folded.scored).toBe(outcomes.filter((o) => o.status === "scored").length);
    expect(folded.errored).toBe(outcomes.filter((o) => o.status === "error").length);
    expect(folded.totalSpent).toEqual(
      usageOf(attempts.filter((a) => a.provenance.kind === "executed")),
    );
    expect(folded.spentNow).toEqual(
      usageOf(attempts.filter((a) => isNow(a) && a.provenance.kind === "executed")),
    );
    expect(folded.reused).toEqual(usageOf(outcomes.filter((o) => !isNow(o))));
    expect(folded.totalSpent.unpriced).toBeGreaterThan(0);
    expect(folded.totalSpent.costUsd).toBeGreaterThan(0);
    expect(folded.executedNow).toBe(attempts.filter(isNow).length);
    // Errors by type, each with its first three outcomes in key order and their own messages.
    const errored = outcomes.filter((o) => o.status === "error");
    const types = [...new Set(errored.map((o) => o.error!.type))];
    const expected = types
      .map((type) => {
        const of = errored.filter((o) => o.error!.type === type);
        const examples = of.slice(0, 3).map((o) => ({
          sampleId: o.sampleId,
          epoch: o.epoch,
          message: o.error!.message,
        }));
        return { type, count: of.length, examples };
      })
      .sort((p, q) => q.count - p.count || (p.type < q.type ? -1 : 1));
    expect(expected.length).toBe(3);
    expect(folded.errors).toEqual(expected);
    expect(folded.errorsByType).toEqual(Object.fromEntries(expected.map((g) => [g.type, g.count])));
  });

  it("quotes the lowest keys' errors per type, their latest message's first line, never a stack", () => {
    const base = { ...history(1)[0]!, fingerprint: "fp", scores: [], usage: null };
    const err = (
      sampleId: string,
      epoch: number,
      attempt: number,
      type: "solver" | "timeout",
      message: string,
    ): FoldedAttempt => ({
      ...base,
      sampleId,
      epoch,
      attempt,
      status: "error",
      error: { type, message },
    });
    const fold = new OutcomeFold({
      fingerprintOf: () => "fp",
      scorers: ["s"],
      reducer: "mean",
      isNow: () => false,
    });
    const long = "x".repeat(500);
    for (const a of [
      err("s1", 1, 1, "solver", "first try"),
      err("s1", 1, 2, "solver", "tool failed\n    at solve (/p/eval.mjs:3:9)\n    at run"),
      // Scored on retry: not an errored outcome, so not quoted.
      err("s2", 1, 1, "solver", "flaky"),
      { ...base, sampleId: "s2", epoch: 1, attempt: 2, status: "scored" as const, error: null },
      err("s3", 1, 1, "timeout", "timed out after 10ms"),
      err("s3", 2, 1, "solver", long),
      err("s4", 1, 1, "solver", "tool failed"),
      err("s5", 1, 1, "solver", "tool failed"),
      err("s6", 1, 1, "solver", "tool failed"),
    ])
      fold.add(a);
    const { errors, errorsByType } = fold.finish();
    expect(errorsByType).toEqual({ solver: 5, timeout: 1 });
    expect(errors).toEqual([
      {
        type: "solver",
        count: 5,
        examples: [
          { sampleId: "s1", epoch: 1, message: "tool failed" },
          { sampleId: "s3", epoch: 2, message: `${"x".repeat(199)}…` },
          { sampleId: "s4", epoch: 1, message: "tool failed" },
        ],
      },
      {
        type: "timeout",
        count: 1,
        examples: [{ sampleId: "s3", epoch: 1, message: "timed out after 10ms" }],
      },
    ]);
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

  it.each<[Reducer, number, number]>([
    // Sample a scores [1, 0, 0] over its epochs, sample b [1, 1, 0].
    ["mean", 0.5, 1 / 6], // 1/3 and 2/3
    ["max", 1, 0],
    ["min", 0, 0],
    ["mode", 0.5, 0.5], // 0 and 1
    ["pass@2", 5 / 6, 1 / 6], // 1 − C(2,2)/C(3,2) = 2/3, and 1
    ["pass@5", 1, 0], // k above the 3 epochs: k = 3, so any pass counts
  ])("reduces epochs with %s: mean %s, stderr %s", (reducer, mean, stderr) => {
    const fold = new OutcomeFold({
      fingerprintOf: () => "fp",
      scorers: ["s"],
      reducer,
      isNow: () => false,
    });
    const scores = { a: [1, 0, 0], b: [1, 1, 0] };
    for (const [sampleId, values] of Object.entries(scores)) {
      values.forEach((value, i) =>
        fold.add({
          ...history(1)[0]!,
          sampleId,
          epoch: i + 1,
          attempt: 1,
          status: "scored",
          fingerprint: "fp",
          scores: [{ scorer: "s", value }],
        }),
      );
    }
    const [metric] = fold.finish().metrics;
    expect(metric).toMatchObject({ scorer: "s", samples: 2 });
    expect(metric!.mean).toBeCloseTo(mean, 12);
    expect(metric!.stderr).toBeCloseTo(stderr, 12);
  });

  it("counts a scorer error's other scores and leaves the thrown one out of its metric", () => {
    const at = (sampleId: string, judge: number | null): FoldedAttempt => ({
      ...history(1)[0]!,
      sampleId,
      epoch: 1,
      attempt: 1,
      fingerprint: "fp",
      status: judge === null ? "error" : "scored",
      scores: [
        { scorer: "exact", value: 1 },
        judge === null
          ? { scorer: "judge", value: null, error: "no GRADE line" }
          : { scorer: "judge", value: judge },
      ],
      error: judge === null ? { type: "scorer", message: "no GRADE line" } : null,
    });
    const fold = new OutcomeFold({
      fingerprintOf: () => "fp",
      scorers: ["exact", "judge"],
      reducer: "mean",
      isNow: () => false,
    });
    for (const a of [at("a", null), at("b", 0.5), at("c", null)]) fold.add(a);
    const { metrics, scored, errorsByType } = fold.finish();
    expect(metrics.map((m) => [m.scorer, m.mean, m.samples])).toEqual([
      ["exact", 1, 3],
      ["judge", 0.5, 1],
    ]);
    expect(scored).toBe(1);
    expect(errorsByType).toEqual({ scorer: 2 });
  });

  it("totals retries over every executed attempt and counts keys that needed another attempt", () => {
    const at = (
      sampleId: string,
      epoch: number,
      attempt: number,
      more: Partial<FoldedAttempt> = {},
    ): FoldedAttempt => ({
      sampleId,
      epoch,
      attempt,
      fingerprint: "fp",
      status: "scored",
      scores: [],
      usage: null,
      error: null,
      provenance: { kind: "executed" },
      ...more,
    });
    const fold = new OutcomeFold({
      fingerprintOf: () => "fp",
      scorers: [],
      reducer: "mean",
      isNow: () => false,
    });
    for (const a of [
      at("a", 1, 1, { status: "error", retries: 5, error: { type: "provider", message: "503" } }),
      at("a", 1, 2, { status: "error", retries: 5, error: { type: "provider", message: "503" } }),
      at("a", 1, 3, { retries: 1 }),
      // An attempt of an old fingerprint is history, but its requests were re-sent all the same.
      at("a", 2, 1, { fingerprint: "old", retries: 2 }),
      at("a", 2, 2, { retries: 0 }),
      // Stored before retries were counted: unknown, not 0.
      at("b", 1, 1),
      // Imported: its requests were made elsewhere.
      at("c", 1, 1, { retries: 7, provenance: { kind: "imported", source: "sha256:x" } }),
      at("d", 1, 1, { retries: 3 }),
    ])
      fold.add(a);
    expect(fold.finish().retries).toEqual({ total: 16, keysRetried: 2, unrecorded: 1 });
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
