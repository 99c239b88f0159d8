import { describe, expect, it } from "vitest";
import { bothStores } from "../../test/helpers/both-stores.js";
import { randomEval } from "../../test/helpers/random-eval.js";
import type { EngineEval, Scorer } from "../core/eval.js";
import type { Scoring } from "../core/types.js";
import { UsageSum } from "../core/usage-sum.js";
import { buildReport } from "../engine/report.js";
import type { Store } from "../store/types.js";
import { rescoreRun } from "./rescore-run.js";
import { runEval } from "./start-run.js";

const stores = bothStores();

/**
 * An eval whose keys end every way a key can (`randomEval`), and a judge that pays for its grades
 * and throws now and then.
 */
function randomEvalWithJudge(seed: number): { ev: EngineEval; judge: Scorer } {
  const { ev, rnd } = randomEval(seed, { name: "rescored", samples: 30 });
  const judge: Scorer = {
    name: "judge",
    score: () => {
      const roll = rnd();
      if (roll < 0.2) throw new Error("judge threw");
      const usage = roll < 0.5 ? { inputTokens: 50, outputTokens: 4 } : undefined;
      return {
        value: roll,
        usage: usage ?? { inputTokens: 90, outputTokens: 6, costUsd: roll / 1e3 },
      };
    },
  };
  return { ev, judge };
}

/** The stored scorings' identities, to tell the ones a rescore made from those before it. */
async function scoringIds(store: Store, runId: string): Promise<Set<string>> {
  return new Set((await store.reads.listScorings(runId)).map(scoringId));
}

function scoringId(s: Scoring): string {
  return `${s.sampleId}/${s.epoch}/${s.attempt}/${s.scoring}`;
}

/** What the scorings stored since `before` spent, summed as the invocation that made them sums. */
async function spentSince(store: Store, runId: string, before: Set<string>): Promise<UsageSum> {
  const sum = new UsageSum();
  for (const s of await store.reads.listScorings(runId)) {
    if (!before.has(scoringId(s)) && s.usage) sum.addScoring(s.usage);
  }
  return sum;
}

describe.each(stores)("a rescore's end report (%s)", (_name, open, skip) => {
  it.skipIf(skip).each([41, 42, 43, 44])(
    "is deep-equal to the report folded from every attempt and scoring (seed %i)",
    async (seed) => {
      const store = await open();
      const { ev, judge } = randomEvalWithJudge(seed);
      const { runId } = await runEval({ store, eval: ev });
      // A judge added to every output, then the scorer errors alone, then nothing to score.
      const requests = [{}, { onlyErrors: true }, { onlyErrors: true, scorers: ["exact"] }];
      for (const request of requests) {
        const before = await scoringIds(store, runId);
        const report = await rescoreRun({
          store,
          runId,
          eval: { ...ev, scorers: [...ev.scorers, judge] },
          ...request,
        });
        const run = (await store.runs.get(runId))!;
        const folded = await buildReport({
          store,
          run,
          plan: report.plan,
          resumed: false,
          scorings: {
            committed: report.rescored,
            spentNow: await spentSince(store, runId, before),
          },
          wallMs: report.wallMs,
        });
        expect(report).toEqual(folded);
      }
    },
  );
});
