import { describe, expect, it } from "vitest";
import { bothStores } from "../../test/helpers/both-stores.js";
import { randomEval } from "../../test/helpers/random-eval.js";
import { figuresReport } from "../engine/figures-report.js";
import { UsageSum } from "../core/usage-sum.js";
import { buildReport } from "../engine/report.js";
import type { Store } from "../store/types.js";
import { runEval } from "./start-run.js";

const stores = bothStores();

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
      const report = await runEval({
        store,
        eval: randomEval(seed, { name: "fresh", samples: 24, jitter: true }).ev,
      });
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
