import type { EngineEval, Scorer, SolverFn } from "../../src/core/eval.js";
import { fingerprintSample } from "../../src/core/fingerprint.js";
import type { Reducer, Sample } from "../../src/core/types.js";

/**
 * A seeded generator of numbers in [0, 1) (a linear congruential one): the same seed gives the
 * same sequence, so a randomised test that fails can be run again as it was.
 *
 * @example const rnd = seededRandom(7); rnd(); // 0.0000038…
 */
export function seededRandom(seed: number): () => number {
  let x = seed;
  return () => (x = (x * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
}

export interface RandomEvalOptions {
  name: string;
  /** How many samples (`k0`, `k1`, …). */
  samples: number;
  /** Each attempt's fate moves a little by chance (`Math.random`), not only by its seed. */
  jitter?: boolean;
}

/**
 * An eval whose keys end every way a key can: scored with any value, a solver error (retried or
 * not), a scorer that throws, usage priced, unpriced or absent; its epochs, reducer and retries
 * follow the seed. `rnd` is the generator its `graded` scorer draws from, for further scorers
 * (a judge) that should share it.
 *
 * @example const { ev } = randomEval(31, { name: "fresh", samples: 24 });
 */
export function randomEval(
  seed: number,
  options: RandomEvalOptions,
): { ev: EngineEval; rnd: () => number } {
  const rnd = seededRandom(seed);
  const samples = Array.from({ length: options.samples }, (_, i) => {
    const sample: Sample = { id: `k${i}`, input: `${i}`, target: String(i % 3) };
    return { sample, fingerprint: fingerprintSample(sample) };
  });
  const fate = new Map(samples.map((r) => [r.sample.id, rnd()]));
  const jitter = options.jitter ? () => Math.random() * 0.1 : () => 0;
  const solver: SolverFn = async (sample, ctx) => {
    const roll = (fate.get(sample.id)! * 7 + ctx.epoch * 0.37 + jitter()) % 1;
    if (roll < 0.12) throw new Error(`solver failed on ${sample.id}`);
    const usage =
      roll < 0.3
        ? undefined
        : roll < 0.4
          ? { inputTokens: 7, outputTokens: 2 }
          : { inputTokens: 10, outputTokens: 3, costUsd: Math.round(roll * 1e6) / 1e9 };
    return { output: String(Math.floor(roll * 3)), ...(usage ? { usage } : {}) };
  };
  const exact: Scorer = { name: "exact", score: ({ sample, output }) => output === sample.target };
  const graded: Scorer = {
    name: "graded",
    score: ({ output }) => {
      if (output === "2" && rnd() < 0.3) throw new Error("graded threw");
      return Math.round(rnd() * 4) / 4;
    },
  };
  const reducers: Reducer[] = ["mean", "max", "pass@2", "mode"];
  const ev: EngineEval = {
    name: options.name,
    samples,
    solver,
    scorers: [exact, graded],
    epochs: 1 + (seed % 3),
    reducer: reducers[seed % reducers.length]!,
    concurrency: 4,
    retries: seed % 2,
  };
  return { ev, rnd };
}
