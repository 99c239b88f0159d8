import { describe, expect, it } from "vitest";
import { compareKeys } from "./keys.js";
import { OutcomeFold, type FoldedAttempt } from "./outcome-fold.js";
import { RunFigures, sampleFiguresOf, withAttempt, type SampleFigures } from "./run-figures.js";
import type { AttemptErrorType, Reducer, Score, Usage } from "./types.js";

type Rnd = () => number;

function random(seed: number): Rnd {
  let x = seed;
  return () => (x = (x * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
}

function scoresFor(rnd: Rnd, status: "scored" | "error", type: AttemptErrorType): Score[] {
  const a = { scorer: "a", value: Math.round(rnd() * 7) / 7 };
  if (status === "scored") return [a, { scorer: "b", value: rnd() > 0.5 ? 1 : 0 }];
  return type === "scorer" ? [a, { scorer: "b", value: null, error: "b threw" }] : [];
}

function attemptFor(
  rnd: Rnd,
  key: { sampleId: string; epoch: number },
  n: number,
  fingerprint: string,
): FoldedAttempt {
  const status = rnd() > 0.35 ? "scored" : "error";
  const roll = rnd();
  const type: AttemptErrorType = roll > 0.6 ? "provider" : roll > 0.3 ? "timeout" : "scorer";
  const cost = rnd() / 1000;
  const usage: Usage | null =
    rnd() > 0.2
      ? cost < 0.0001
        ? { inputTokens: 10, outputTokens: 3 }
        : { inputTokens: 10, outputTokens: 3, costUsd: cost }
      : null;
  return {
    ...key,
    attempt: n,
    status,
    fingerprint,
    scores: scoresFor(rnd, status, type),
    usage,
    error: status === "scored" ? null : { type, message: `failed ${key.sampleId}#${n}\nstack` },
    provenance: rnd() > 0.2 ? { kind: "executed" } : { kind: "imported", source: "sha256:x" },
    ...(rnd() > 0.1 ? { retries: Math.floor(rnd() * 3) } : {}),
    ...(status === "scored" && rnd() > 0.8 ? { limit: { limit: "turns", used: 3, max: 3 } } : {}),
  } as FoldedAttempt;
}

/**
 * A run's life, commit by commit in a random order (a key's attempts in their order): new
 * attempts, rescores (an attempt's status and scores replaced), samples whose content changed
 * and scorings' spend, with `RunFigures` kept up to date as a store keeps it. Returns the stored
 * attempts (as they read now), the current fingerprints, the scorings and the kept figures.
 */
function life(seed: number, reducer: Reducer) {
  const rnd = random(seed);
  const fingerprints = new Map<string, string>();
  const attempts: FoldedAttempt[] = [];
  const samples = new Map<string, SampleFigures>();
  const scorings: { usage: Usage | null; retries: number }[] = [];
  let run = new RunFigures(reducer);
  const swap = (sampleId: string, next: SampleFigures) => {
    const before = samples.get(sampleId);
    if (before) run.addSample(before, -1);
    run.addSample(next, 1);
    samples.set(sampleId, next);
  };
  const ids = Array.from({ length: 40 }, (_, i) => `s${String(i).padStart(2, "0")}`);
  for (const id of ids) fingerprints.set(id, "v1");
  for (let step = 0; step < 400; step++) {
    const sampleId = ids[Math.floor(rnd() * ids.length)]!;
    const roll = rnd();
    const mine = () => attempts.filter((a) => a.sampleId === sampleId);
    if (roll < 0.7) {
      const epoch = 1 + Math.floor(rnd() * 3);
      const n = 1 + attempts.filter((a) => a.sampleId === sampleId && a.epoch === epoch).length;
      const attempt = attemptFor(rnd, { sampleId, epoch }, n, fingerprints.get(sampleId)!);
      attempts.push(attempt);
      run.addAttempt(attempt);
      swap(sampleId, withAttempt(samples.get(sampleId), attempt, fingerprints.get(sampleId)!));
    } else if (roll < 0.85) {
      const target = mine()[Math.floor(rnd() * mine().length)];
      if (!target || target.scores.length === 0) continue;
      // A rescore: the scoring's verdict overlays the attempt, and its judge's spend is the run's.
      const status = rnd() > 0.3 ? "scored" : "error";
      Object.assign(target, {
        status,
        scores: scoresFor(rnd, status, "scorer"),
        error: status === "scored" ? null : { type: "scorer", message: "judge threw" },
      });
      const scoring = {
        usage: { inputTokens: 4, outputTokens: 1, costUsd: rnd() / 997 },
        retries: 1,
      };
      scorings.push(scoring);
      run.addScoring(scoring);
      swap(sampleId, sampleFiguresOf(mine(), fingerprints.get(sampleId)!));
    } else if (roll < 0.9) {
      fingerprints.set(sampleId, rnd() > 0.5 ? "v2" : "v1");
      swap(sampleId, sampleFiguresOf(mine(), fingerprints.get(sampleId)!));
    } else {
      // What the store keeps is text: the figures read back are the same figures.
      run = RunFigures.parse(JSON.parse(JSON.stringify(run)));
    }
  }
  return { attempts, fingerprints, scorings, run, samples };
}

describe("RunFigures", () => {
  it.each<[number, Reducer]>([
    [1, "mean"],
    [2, "max"],
    [3, "pass@2"],
    [4, "mode"],
    [5, "min"],
    [6, "mean"],
  ])(
    "kept commit by commit, equals a fold of every stored attempt exactly (seed %i, %s)",
    (seed, reducer) => {
      const { attempts, fingerprints, scorings, run } = life(seed, reducer);
      const scorers = ["b", "a", "missing"];
      const fold = new OutcomeFold({
        fingerprintOf: (id) => fingerprints.get(id),
        scorers,
        reducer,
        isNow: () => false,
        reused: "imported",
      });
      for (const a of [...attempts].sort((p, q) => compareKeys(p, q) || p.attempt - q.attempt)) {
        fold.add(a);
      }
      for (const s of scorings) fold.addScoring(s, false);
      const { errors, ...expected } = fold.finish();
      expect(run.figures(scorers)).toStrictEqual(expected);
      expect(errors.length).toBeGreaterThan(0);
      expect(expected.metrics[0]!.samples).toBeGreaterThan(10);
      expect(expected.totalSpent.unpriced).toBeGreaterThan(0);
    },
  );

  it("takes every trace of a sample away with it: only the rows' spend is left", () => {
    const { run, samples } = life(9, "mean");
    const spent = run.figures([]).totalSpent;
    for (const sample of samples.values()) run.addSample(sample, -1);
    const empty = new RunFigures("mean");
    expect(run.figures(["a", "b"])).toStrictEqual({
      ...empty.figures(["a", "b"]),
      totalSpent: spent,
      retries: run.retries,
    });
    expect(run.toJSON().scorers).toEqual([]);
    expect(run.toJSON().errorsByType).toEqual({});
  });
});
