import type { UsageTotal } from "../core/aggregate.js";
import type { PlanSummary, RunReport } from "../core/events.js";
import type { FoldResult } from "../core/outcome-fold.js";
import type { ReviewFigures } from "../core/review-figures.js";
import type { Run } from "../core/types.js";
import type { RateWaits } from "../core/rate-limits.js";
import { reuseSummaryOf } from "../core/reuse-plan.js";

/** What a report says beyond the run's figures: the invocation's side of it. */
export interface ReportParts {
  plan: PlanSummary;
  /** Keys in all: samples × epochs. */
  total: number;
  resumed: boolean;
  /** A report read from the store with no invocation behind it. */
  stored: boolean;
  rateLimits: readonly RateWaits[];
  spentNow: UsageTotal;
  /** A distributed run's worker: what other workers committed meanwhile. */
  byOtherWorkers?: UsageTotal;
  executed: number;
  rescored: number;
  wallMs: number;
}

/**
 * A run's report from its figures (folded from its attempts by `buildReport`, or kept by the
 * store for `figuresReport`), the human scorers' figures when it has reviews, and the
 * invocation's side: the one place a `RunReport` is put together, so both ways give the same
 * fields in the same order.
 *
 * @example const report = assembleReport(run, fold.finish(), undefined, parts);
 */
export function assembleReport(
  run: Run,
  figures: FoldResult,
  human: ReviewFigures | undefined,
  parts: ReportParts,
): RunReport {
  const { total } = parts;
  return {
    runId: run.id,
    evalName: run.evalName,
    status: run.status,
    resumed: parts.resumed,
    ...(parts.stored ? { stored: true as const } : {}),
    ...(run.config.reuse ? { reuse: reuseSummaryOf(run.config.reuse) } : {}),
    plan: parts.plan,
    counts: {
      total,
      scored: figures.scored,
      errored: figures.errored,
      remaining: total - figures.scored,
      limited: figures.limited,
    },
    ...(figures.limited > 0 ? { limitedBy: figures.limitedBy } : {}),
    // The human scorers (reviews) beside the judged ones, and how far they agree.
    metrics: human ? [...figures.metrics, ...human.metrics] : figures.metrics,
    ...(human ? { agreement: human.agreement } : {}),
    distribution: figures.distribution,
    errorsByType: figures.errorsByType,
    errors: figures.errors,
    ...(parts.rateLimits.length > 0 ? { rateLimits: [...parts.rateLimits] } : {}),
    usage: {
      spentNow: parts.spentNow,
      totalSpent: figures.totalSpent,
      reused: figures.reused,
      ...(parts.byOtherWorkers ? { byOtherWorkers: parts.byOtherWorkers } : {}),
    },
    retries: figures.retries,
    executed: parts.executed,
    rescored: parts.rescored,
    preserved: parts.plan.preserved,
    wallMs: parts.wallMs,
  };
}
