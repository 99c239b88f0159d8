import type { PlanSummary, RunReport } from "../core/events.js";
import { OutcomeFold } from "../core/outcome-fold.js";
import { planRun, type ExecutionPlan } from "../core/plan.js";
import type { Run, SampleRecord } from "../core/types.js";
import type { UsageSum } from "../core/usage-sum.js";
import type { AttemptHead, Store } from "../store/types.js";
import { assembleReport } from "./assemble-report.js";
import { figuresReport } from "./figures-report.js";
import { recordedReruns } from "./rerun-plan.js";
import { storedReviewFigures } from "./review-report.js";
import { SnapshotWindow } from "./snapshot-window.js";

/**
 * The scorings an invocation committed: how many, and what they spent, summed exactly
 * (`UsageSum`) over the same rows a report reads back from the store.
 */
export interface ScoringsNow {
  committed: number;
  spentNow: UsageSum;
}

export interface ReportInput {
  store: Store;
  run: Run;
  /** The samples whose fingerprints define the current outcomes. */
  samples?: readonly SampleRecord[];
  /** The current fingerprint of a sample, when the caller has the samples indexed already. */
  fingerprintOf?: (sampleId: string) => string | undefined;
  /** The run's attempts, when the caller has just read them. */
  heads?: readonly AttemptHead[];
  plan: PlanSummary;
  resumed: boolean;
  /** Whether this invocation committed the attempt (default: none did). */
  isNow?: (attempt: AttemptHead) => boolean;
  /**
   * The same, its sample's place in the snapshot (sample-id order) given: what a report without
   * `samples` asks (`ExecutionEnd.isNowAt`), whose samples are the snapshot's pages.
   */
  isNowAt?: (index: number | undefined, attempt: AttemptHead) => boolean;
  /** A distributed run's worker: whether another worker committed it meanwhile (`byOtherWorkers`). */
  isOthers?: (attempt: AttemptHead) => boolean;
  /** The same, its sample's place in the snapshot given: a report without `samples` asks it. */
  isOthersAt?: (index: number | undefined, attempt: AttemptHead) => boolean;
  /** How many scorings this invocation committed, and what they spent (default: none). */
  scorings?: ScoringsNow;
  wallMs: number;
  /**
   * False for a report read from the store with no invocation behind it (`stet show`, the API,
   * reports): then `reused` is only imported outcomes, and `stored` marks the report.
   */
  invocation?: boolean;
}

/**
 * A run's report, computed from the stored attempts and scorings alone: the same store state
 * always gives the same figures, however many interruptions led to it. Every spend figure is a
 * sum of stored rows: spent now is over the rows this invocation committed (`isNow`, and the
 * exact sum of its scorings, `scorings.spentNow`), never a rounded tally of what it saw. The attempts are folded page by page (or from
 * `heads` when the caller has them), so a large run's report holds no attempt list.
 */
export async function buildReport(input: ReportInput): Promise<RunReport> {
  const { store, run, samples } = input;
  // Without the samples, their fingerprints are read a page at a time beside the attempts'.
  const window = samples ? undefined : new SnapshotWindow(store, run.id);
  const fingerprintOf = input.fingerprintOf ?? window?.fingerprintOf ?? indexFingerprints(samples!);
  const { isNowAt } = input;
  const isNow =
    window && isNowAt
      ? (a: AttemptHead) => isNowAt(window.indexOf(a.sampleId), a)
      : (input.isNow ?? (() => false));
  const { isOthersAt } = input;
  const isOthers =
    window && isOthersAt
      ? (a: AttemptHead) => isOthersAt(window.indexOf(a.sampleId), a)
      : input.isOthers;
  const stored = input.invocation === false;
  const fold = new OutcomeFold<AttemptHead>({
    fingerprintOf,
    scorers: run.config.scorers,
    reducer: run.config.reducer,
    isNow,
    ...(isOthers ? { isOthers } : {}),
    // What the run has, seen from no invocation or from one with nothing to do, is not reuse:
    // only imported outcomes (paid elsewhere) are.
    reused:
      stored || (input.plan.toExecute === 0 && input.plan.toRescore === 0)
        ? "imported"
        : "preserved",
  });
  if (input.heads) {
    await window?.hold(input.heads);
    for (const head of input.heads) fold.add(head);
  } else
    for await (const page of store.reads.attemptHeadPages(run.id)) {
      await window?.hold(page);
      for (const head of page) fold.add(head);
      window?.release(page);
    }
  // Scorings are spend of their own (a judge's): on the run's total, and now if made now; a
  // rescore's judges re-sent requests of their own: the run's, never the attempt's.
  for (const scoring of await store.reads.listScorings(run.id)) fold.addScoring(scoring, false);
  if (input.scorings) fold.addSpentNow(input.scorings.spentNow);
  const figures = fold.finish();
  const reviewed = await storedReviewFigures(store, run, samples, input.heads);
  return assembleReport(run, figures, reviewed, {
    plan: input.plan,
    total: (samples?.length ?? run.sampleCount) * run.config.epochs,
    resumed: input.resumed,
    stored,
    rateLimits: await store.rates.listWaits(run.id),
    spentNow: figures.spentNow,
    ...(isOthers ? { byOtherWorkers: figures.byOthers } : {}),
    executed: figures.executedNow,
    rescored: input.scorings?.committed ?? 0,
    wallMs: input.wallMs,
  });
}

/** The plan without its lists, for events and reports. */
export function summarizePlan(plan: ExecutionPlan): PlanSummary {
  const { toExecute, toRescore, samples: _s, rerunAfter: _r, replayFrom: _f, ...rest } = plan;
  return { ...rest, toExecute: toExecute.length, toRescore: toRescore.length };
}

/**
 * The report of a run as it stands in the store, without executing anything: what `stet show`
 * and the API's run detail print.
 *
 * @example const report = await storedReport(store, run); report.counts.remaining;
 */
export async function storedReport(
  store: Store,
  run: Run,
  /** An invocation that found nothing to do reports as one (spent now, reused), not as a read. */
  options: { invocation?: boolean } = {},
): Promise<RunReport> {
  // The figures the store keeps give the same report without reading an attempt; the fold of
  // every attempt is for what they cannot give exactly (see figuresReport).
  const invocation = options.invocation ?? false;
  return (await figuresReport(store, run, { invocation })) ?? foldedReport(store, run, options);
}

/**
 * `storedReport` folded from every stored attempt, as it was computed before the store kept
 * figures: what `figuresReport` must equal, and what it falls back to.
 *
 * @example const report = await foldedReport(store, run);
 */
export async function foldedReport(
  store: Store,
  run: Run,
  options: { invocation?: boolean } = {},
): Promise<RunReport> {
  const [samples, heads, inflight, rerun] = await Promise.all([
    store.reads.getSamples(run.id),
    store.reads.listAttemptHeads(run.id),
    store.runs.listInflight(run.id),
    recordedReruns(store, run.id),
  ]);
  const plan = planRun({
    snapshot: samples,
    epochs: run.config.epochs,
    attempts: heads,
    inflight,
    ...(rerun.length === 0 ? {} : { rerun }),
  });
  return buildReport({
    store,
    run,
    samples,
    heads,
    plan: summarizePlan(plan),
    resumed: false,
    wallMs: 0,
    invocation: options.invocation ?? false,
  });
}

function indexFingerprints(
  samples: readonly SampleRecord[],
): (sampleId: string) => string | undefined {
  const byId = new Map(samples.map((r) => [r.sample.id, r.fingerprint]));
  return (sampleId) => byId.get(sampleId);
}
