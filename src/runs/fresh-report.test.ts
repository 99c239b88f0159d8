import { describe, expect, it } from "vitest";
import { bothStores } from "../../test/helpers/both-stores.js";
import type { EngineEval, Scorer, SolverFn } from "../core/eval.js";
import { fingerprintSample } from "../core/fingerprint.js";
import type { Reducer, Sample } from "../core/types.js";
import { figuresReport } from "../engine/figures-report.js";
import { UsageSum } from "../core/usage-sum.js";
import { buildReport } from "../engine/report.js";
import type { Store } from "../store/types.js";
import { runEval } from "./start-run.js";

const stores = bothStores();

function random(seed: number): () => number {
  let x = seed;
  return () => (x = (x * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
}

/**
 * An eval whose keys end every way a key can: scored with any value, errored (retried or not),
 * a scorer that throws, usage priced, unpriced or absent, a per-sample limit.
 */
function randomEval(seed: number): EngineEval {
  const rnd = random(seed);
  const samples = Array.from({ length: 24 }, (_, i) => {
    const sample: Sample = { id: `k${i}`, input: `${i}`, target: String(i % 3) };
    return { sample, fingerprint: fingerprintSample(sample) };
  });
  const fate = new Map(samples.map((r) => [r.sample.id, rnd()]));
  const solver: SolverFn = async (sample, ctx) => {
    const roll = (fate.get(sample.id)! * 7 + ctx.epoch * 0.37 + Math.random() * 0.1) % 1;
    if (roll < 0.12) throw new Error(`solver failed on ${sample.id}`);
    const usage =
      roll < 0.3
        ? undefined
        : roll < 0.4
          ? { inputTokens: 7, outputTokens: 2 }
          : { inputTokens: 10, outputTokens: 3, costUsd: Math.round(roll * 1e6) / 1e9 };
    return { output: String(Math.floor(roll * 3)), ...(usage ? { usage } : {}) };
  };
  const exact: Scorer = {
    name: "exact",
    score: ({ sample, output }) => output === sample.target,
  };
  const graded: Scorer = {
    name: "graded",
    score: ({ output }) => {
      if (output === "2" && rnd() < 0.3) throw new Error("graded threw");
      return Math.round(rnd() * 4) / 4;
    },
  };
  const reducers: Reducer[] = ["mean", "max", "pass@2", "mode"];
  return {
    name: "fresh",
    samples,
    solver,
    scorers: [exact, graded],
    epochs: 1 + (seed % 3),
    reducer: reducers[seed % reducers.length]!,
    concurrency: 4,
    retries: seed % 2,
  };
}

/** Every stored scoring's spend, summed as an invocation sums those it committed. */
async function scoringSpend(store: Store, runId: string): Promise<UsageSum> {
  const sum = new UsageSum();
  for (const s of await store.reads.listScorings(runId)) if (s.usage) sum.addScoring(s.usage);
  return sum;
}

describe.each(stores)("a new run's report from its figures (%s)", (_name, open, skip) => {
  it.skipIf(skip).each([31, 32, 33, 34, 35])(
    "is deep-equal to the report folded from every attempt, each one made now (seed %i)",
    async (seed) => {
      const store = await open();
      const report = await runEval({ store, eval: randomEval(seed) });
      const run = (await store.runs.get(report.runId))!;
      const folded = await buildReport({
        store,
        run,
        plan: report.plan,
        resumed: false,
        isNow: () => true,
        // Scorings (scorer errors scored again by its retries) are this invocation's too.
        scorings: { committed: report.rescored, spentNow: await scoringSpend(store, run.id) },
        wallMs: report.wallMs,
      });
      expect(report).toEqual(folded);
      expect(report.counts.errored + report.counts.scored).toBeGreaterThan(0);
      // With scorings the report is folded (the figures do not say which spend is now).
      if (report.rescored > 0) return;
      const kept = await figuresReport(store, run, { invocation: true, allNow: true });
      expect(kept).toBeDefined();
      const { plan, preserved, wallMs } = folded;
      expect({ ...kept, plan, preserved, wallMs }).toEqual(folded);
    },
  );
});
