import type { ScorerMetrics, UsageTotal } from "../core/aggregate.js";
import { OutcomeFold } from "../core/outcome-fold.js";
import { selectOutcomes } from "../core/outcomes.js";
import { reviewedKeys, reviewedOutcomes, reviewFigures } from "../core/review-figures.js";
import type { AttemptHead, RunFilter, Store } from "../store/types.js";
import { listRuns, type ListedRun, type ReadOptions } from "./read-run.js";

/** A listed run with the figures of its report: metrics and what it spent in all. */
export interface RunListingWithFigures extends ListedRun {
  metrics: ScorerMetrics[];
  spent: UsageTotal;
}

/**
 * The runs of the store (as `listRuns` gives them) with each run's metrics and total spend,
 * folded exactly as its report is (`OutcomeFold`), from one multi-run read of the store
 * (`listReportInputs`) rather than a report per run: what the runs page shows in one request.
 *
 * @example const [first] = await listRunsWithFigures(store, { limit: 50 }); first?.metrics;
 */
export async function listRunsWithFigures(
  store: Store,
  filter: RunFilter = {},
  options: ReadOptions = {},
): Promise<RunListingWithFigures[]> {
  return withFigures(store, await listRuns(store, filter, options));
}

/**
 * Listed runs with their metrics and total spend, folded as `listRunsWithFigures` folds them.
 *
 * @example const [a, b] = await withFigures(store, [listingA, listingB]);
 */
export async function withFigures<T extends ListedRun>(
  store: Store,
  listed: readonly T[],
): Promise<(T & { metrics: ScorerMetrics[]; spent: UsageTotal })[]> {
  // Reviews are few and indexed by run: one small read per run, for the human scorers.
  const reviews = await Promise.all(listed.map((l) => store.reviews.list(l.run.id)));
  // The figures the store keeps give a run's metrics and spend without reading its attempts (with
  // the reviewed keys' figures for the human scorers; re-run requests change only a plan); runs
  // whose figures were kept with another reducer are folded from every attempt.
  const kept = await Promise.all(
    listed.map(async ({ run }, i) => {
      const { reducer, scorers } = run.config;
      const keys = reviewedKeys(reviews[i]!);
      const read = await store.reads.readFigures(run.id, reducer, keys);
      if (read.figures.reducer !== reducer) return undefined;
      const { metrics, totalSpent } = read.figures.figures(scorers);
      if (keys.length === 0) return { metrics, spent: totalSpent };
      const outcomes = reviewedOutcomes(keys, read.keys);
      const human = reviewFigures(reviews[i]!, outcomes, scorers, reducer);
      return { metrics: [...metrics, ...human.metrics], spent: totalSpent };
    }),
  );
  const folded = listed.filter((_, i) => !kept[i]).map((l) => l.run.id);
  const inputs = await store.reads.listReportInputs(folded);
  return listed.map((listing, i) => {
    const figures = kept[i];
    if (figures) return { ...listing, ...figures };
    const { run } = listing;
    const input = inputs.get(run.id);
    const fold = new OutcomeFold<AttemptHead>({
      fingerprintOf: (id) => input?.fingerprints.get(id),
      scorers: run.config.scorers,
      reducer: run.config.reducer,
      isNow: () => false,
    });
    for (const head of input?.heads ?? []) fold.add(head);
    for (const usage of input?.scoringUsage ?? []) fold.addScoring({ usage }, false);
    const { metrics, totalSpent } = fold.finish();
    const reviewed = reviews[i]!;
    if (reviewed.length === 0 || !input) return { ...listing, metrics, spent: totalSpent };
    // The human scorers after the run's own, as its report lists them.
    const outcomes = selectOutcomes(input.heads, input.fingerprints);
    const human = reviewFigures(reviewed, outcomes, run.config.scorers, run.config.reducer);
    return { ...listing, metrics: [...metrics, ...human.metrics], spent: totalSpent };
  });
}
