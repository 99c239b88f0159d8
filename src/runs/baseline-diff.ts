import type { UsageTotal } from "../core/aggregate.js";
import { StetError } from "../core/errors.js";
import type { Json } from "../core/json.js";
import type { Run, Sample } from "../core/types.js";
import type { Store } from "../store/types.js";
import { findBaseline, type BaselineSelector, type ChosenBaseline } from "./baseline.js";
import { diffRuns, type RunDiff } from "./diff-runs.js";
import { withFigures } from "./list-run-figures.js";
import { requireRun } from "./require-run.js";

/** How many regressed samples per scorer a comparison carries with their input and outputs. */
export const EXAMPLES_PER_SCORER = 10;

/** A regressed sample as a report shows it: its input and target, and both runs' outputs. */
export interface RegressedExample {
  sampleId: string;
  input: Json;
  target: Json | null;
  /** The output of the key's last attempt of epoch 1 in each run (null when it has none). */
  baseline: Json | null;
  run: Json | null;
}

/** A run compared with its baseline (`stet diff --baseline`). */
export interface BaselineComparison {
  diff: RunDiff;
  baseline: ChosenBaseline;
  target: Run;
  /** Compared on the samples both runs have (`--common`), though their samples differ. */
  common: boolean;
  /** Each run's total spend: the sums of its stored attempts and scorings. */
  spend: { baseline: UsageTotal; run: UsageTotal };
  /** Per scorer, its first regressed samples (up to `EXAMPLES_PER_SCORER`). */
  examples: Record<string, RegressedExample[]>;
}

/**
 * Compares run `runId` with the baseline `selector` picks (see `findBaseline`): the paired diff
 * (baseline as A), both runs' spend and the first regressed samples with their outputs. Samples
 * that differ (in one run only, or changed) refuse the comparison (`E_BASELINE_MISMATCH`, with
 * their counts) unless `common`, which compares the samples both have.
 *
 * @example const c = await compareWithBaseline(store, "r_pr", { kind: "latest" }, {});
 */
export async function compareWithBaseline(
  store: Store,
  runId: string,
  selector: BaselineSelector,
  options: { common?: boolean },
): Promise<BaselineComparison> {
  const target = await requireRun(store, runId);
  const baseline = await findBaseline(store, target, selector);
  const diff = await diffRuns(store, baseline.run.id, target.id);
  const differ = diff.onlyInA.length + diff.onlyInB.length + diff.changed.length > 0;
  if (differ && !options.common) {
    const paired = diff.scorers[0]?.paired ?? 0;
    throw new StetError(
      "E_BASELINE_MISMATCH",
      `baseline ${baseline.run.id} and ${target.id} have different samples: ` +
        `${diff.onlyInA.length} only in the baseline, ${diff.onlyInB.length} only in ${target.id}, ` +
        `${diff.changed.length} with changed content; pass --common to compare the ${paired} they share`,
      { details: { baseline: baseline.run.id, runId: target.id } },
    );
  }
  const listed = await Promise.all(
    [baseline.run, target].map(async (run) => ({
      run,
      counts: await store.reads.countKeys(run.id),
    })),
  );
  const [a, b] = await withFigures(store, listed);
  return {
    diff,
    baseline,
    target,
    common: differ,
    spend: { baseline: a!.spent, run: b!.spent },
    examples: await regressedExamples(store, diff),
  };
}

async function regressedExamples(
  store: Store,
  diff: RunDiff,
): Promise<Record<string, RegressedExample[]>> {
  const wanted = new Set(diff.scorers.flatMap((s) => s.regressedIds.slice(0, EXAMPLES_PER_SCORER)));
  if (wanted.size === 0) return {};
  // The snapshot a page at a time, keeping the few wanted: a large run is never held whole.
  const samples = new Map<string, Sample>();
  for await (const page of store.reads.samplePages(diff.runB)) {
    for (const r of page) if (wanted.has(r.sample.id)) samples.set(r.sample.id, r.sample);
    if (samples.size === wanted.size) break;
  }
  const outputOf = async (runId: string, sampleId: string): Promise<Json | null> => {
    const attempts = await store.reads.listAttempts(runId, { sampleId, epoch: 1 });
    return attempts.at(-1)?.output ?? null;
  };
  const examples: Record<string, RegressedExample[]> = {};
  for (const s of diff.scorers) {
    examples[s.scorer] = await Promise.all(
      s.regressedIds.slice(0, EXAMPLES_PER_SCORER).map(async (sampleId) => ({
        sampleId,
        input: samples.get(sampleId)?.input ?? null,
        target: samples.get(sampleId)?.target ?? null,
        baseline: await outputOf(diff.runA, sampleId),
        run: await outputOf(diff.runB, sampleId),
      })),
    );
  }
  return examples;
}
