import type { UsageTotal } from "../core/aggregate.js";
import type { PlanSummary, RunReport } from "../core/events.js";
import { assembleReport } from "./assemble-report.js";
import { withRerunRequests } from "./rerun-plan.js";
import { reviewedKeys, reviewedOutcomes, reviewFigures } from "../core/review-figures.js";
import type { KeyFigures } from "../core/run-figures.js";
import type { Key, Run } from "../core/types.js";
import type { Store } from "../store/types.js";

/**
 * A run's stored report from the figures the store keeps (`reads.readFigures`), reading no
 * attempt but those of keys asked to re-run (`withRerunRequests`, for the plan): the same report
 * `buildReport` folds from every attempt, field for field. Undefined when the figures cannot give
 * it exactly and the caller must fold: a run whose figures were kept with another reducer.
 * A run's reviews are read whole (people's, so few) with the figures of the keys they name: the
 * human scorers and their agreement need those keys' outcomes only. With `allNow`
 * (an invocation that committed every row the run has, none of them replaying spend: see
 * `Execution.fresh`), the report of that invocation: everything it spent is spent now, and what
 * it executed is every attempt; the caller gives its plan. With `rescore`, the report of a
 * rescore that ended (`RescoreParts`): it committed scorings only, so the figures are the run's.
 *
 * @example const report = await figuresReport(store, run, { invocation: false });
 */
export async function figuresReport(
  store: Store,
  run: Run,
  options: { invocation: boolean; allNow?: boolean; rescore?: RescoreParts },
): Promise<RunReport | undefined> {
  const { config } = run;
  const [reviews, inflight] = await Promise.all([
    store.reviews.list(run.id),
    store.runs.listInflight(run.id),
  ]);
  const reviewed = reviewedKeys(reviews);
  const read = await store.reads.readFigures(run.id, config.reducer, [...inflight, ...reviewed]);
  if (read.figures.reducer !== config.reducer) return undefined;
  const figures = read.figures.report(config.scorers, read.examples);
  const human =
    reviews.length === 0
      ? undefined
      : reviewFigures(
          reviews,
          reviewedOutcomes(
            reviewed,
            read.keys.slice(inflight.length, inflight.length + reviewed.length),
          ),
          config.scorers,
          config.reducer,
        );
  const total = run.sampleCount * config.epochs;
  const { rescore } = options;
  if (rescore) {
    const reused = rescore.reused ?? figures.reused;
    return assembleReport(run, { ...figures, reused }, human, {
      plan: rescore.plan,
      total,
      resumed: false,
      stored: false,
      rateLimits: await store.rates.listWaits(run.id),
      spentNow: rescore.spentNow,
      executed: 0,
      rescored: rescore.rescored,
      wallMs: 0,
    });
  }
  const counted = storedPlan(total, figures, inflight, read.keys, config.epochs);
  // A re-run request makes its key's attempts up to the one it follows history: in the plan
  // only (the outcome a report's figures fold is still the key's best attempt).
  const plan = await withRerunRequests(store, run.id, counted, inflight);
  // An invocation with work to do counts what it found stored as reused: only a fold knows it.
  const allNow = options.invocation && options.allNow === true;
  if (options.invocation && !allNow && (plan.toExecute > 0 || plan.toRescore > 0)) return undefined;
  return assembleReport(run, figures, human, {
    plan,
    total,
    resumed: false,
    stored: !options.invocation,
    rateLimits: await store.rates.listWaits(run.id),
    spentNow: allNow ? figures.totalSpent : figures.spentNow,
    executed: allNow ? figures.totalSpent.attempts : 0,
    rescored: 0,
    wallMs: 0,
  });
}

/**
 * What a resume of the run has left, counted without reading an attempt or a sample: the plan
 * `planRun` makes of a run whose snapshot is its dataset as it is now (no sample changed) and
 * that has no re-run request, from the figures the store keeps and the outcomes of its in-flight
 * keys (`storedPlan`); with those keys, which a resume planning a page at a time needs. Undefined
 * when the figures were kept with another reducer.
 *
 * @example const left = await countedResume(store, run); left?.plan.toExecute;
 */
export async function countedResume(
  store: Store,
  run: Run,
): Promise<{ plan: PlanSummary; inflight: Key[] } | undefined> {
  const { reducer, scorers, epochs } = run.config;
  const inflight = await store.runs.listInflight(run.id);
  const read = await store.reads.readFigures(run.id, reducer, inflight);
  if (read.figures.reducer !== reducer) return undefined;
  const figures = read.figures.report(scorers, read.examples);
  const plan = storedPlan(run.sampleCount * epochs, figures, inflight, read.keys, epochs);
  return { plan, inflight };
}

/**
 * A rescore's side of its end report (`runs/rescore-report.ts`): its plan, what its scorings
 * spent now, how many it committed, and what it found stored (the outcomes' spend: a fold of
 * them, which the figures do not keep; absent when it had nothing to score, then the imported
 * outcomes' as for a stored report).
 */
export interface RescoreParts {
  plan: PlanSummary;
  spentNow: UsageTotal;
  rescored: number;
  reused?: UsageTotal;
}

/**
 * The resume plan `planRun` makes of the stored run (no dataset beside it, no re-run requests),
 * from the outcomes' counts and the in-flight keys' outcomes: an in-flight key without a scored
 * outcome is interrupted; any other key without one is a scorer error to score again, an error
 * to execute again, or never started.
 */
function storedPlan(
  total: number,
  figures: { scored: number; errored: number; errorsByType: Partial<Record<string, number>> },
  inflight: readonly Key[],
  outcomes: readonly (KeyFigures | undefined)[],
  epochs: number,
): PlanSummary {
  let interrupted = 0;
  let interruptedRescores = 0;
  let interruptedErrors = 0;
  const seen = new Set<string>();
  inflight.forEach((key, i) => {
    const k = `${key.sampleId}\u0000${key.epoch}`;
    if (seen.has(k) || key.epoch > epochs) return;
    seen.add(k);
    const outcome = outcomes[i];
    if (outcome?.status === "scored") return;
    interrupted++;
    if (outcome?.error?.type === "scorer") interruptedRescores++;
    else if (outcome) interruptedErrors++;
  });
  const rescores = figures.errorsByType.scorer ?? 0;
  const toRescore = rescores - interruptedRescores;
  const errored = figures.errored - rescores - interruptedErrors;
  const neverStarted =
    total -
    figures.scored -
    figures.errored -
    (interrupted - interruptedRescores - interruptedErrors);
  return {
    total,
    preserved: figures.scored,
    toExecute: interrupted + errored + neverStarted,
    toRescore,
    neverStarted,
    interrupted,
    errored,
    erroredKept: 0,
    changed: [],
    changedKeys: 0,
    rerun: 0,
    missing: [],
  };
}
