import type { UsageTotal } from "../core/aggregate.js";
import type { RunReport } from "../core/events.js";
import { OutcomeFold } from "../core/outcome-fold.js";
import type { Run } from "../core/types.js";
import type { Execution, ExecutionEnd } from "../engine/execute-run.js";
import { figuresReport } from "../engine/figures-report.js";
import { buildReport, summarizePlan } from "../engine/report.js";
import { withAttempts } from "../evalport/outcome-pages.js";
import type { AttemptHead, Store } from "../store/types.js";

/**
 * The end report of a rescore, what `buildReport` folds from every attempt and scoring, field
 * for field, without holding the run: the figures the store keeps (`figuresReport`) give its
 * counts, metrics, errors, total spend and retries; the invocation gives what its scorings spent
 * now (`end.scorings.spentNow`, the stored rows' sum) and how many it committed; what it found
 * stored (`reused`: every key's outcome, as it executed none) is folded from the attempts' heads
 * a page at a time. A run whose figures cannot give its report (an open re-run request) is
 * folded whole, as before.
 *
 * @example const report = await rescoreReport(store, finished, exec, end);
 */
export async function rescoreReport(
  store: Store,
  run: Run,
  exec: Execution,
  end: ExecutionEnd,
): Promise<RunReport> {
  const plan = summarizePlan(exec.plan);
  const wallMs = performance.now() - end.startedAt;
  // An invocation with nothing to do counts only imported outcomes as reused (`buildReport`).
  const worked = plan.toExecute > 0 || plan.toRescore > 0;
  const report = await figuresReport(store, run, {
    invocation: true,
    rescore: {
      plan,
      spentNow: end.scorings.spentNow.total(),
      rescored: end.scorings.committed,
      ...(worked ? { reused: await outcomesSpend(store, run) } : {}),
    },
  });
  if (report) return { ...report, wallMs };
  return buildReport({
    store,
    run,
    plan,
    resumed: exec.resumed,
    isNow: end.isNow,
    scorings: end.scorings,
    wallMs,
  });
}

/**
 * What the run's keys' outcomes (each key's best attempt for its sample's snapshot fingerprint)
 * cost, summed as `OutcomeFold` sums what an invocation found stored: the snapshot's and the
 * attempts' pages joined, one page of samples held at a time.
 */
async function outcomesSpend(store: Store, run: Run): Promise<UsageTotal> {
  let fingerprints = new Map<string, string>();
  const fold = new OutcomeFold<AttemptHead>({
    fingerprintOf: (sampleId) => fingerprints.get(sampleId),
    scorers: [],
    reducer: run.config.reducer,
    isNow: () => false,
  });
  const pages = withAttempts(
    store.reads.sampleFingerprintPages(run.id),
    (s) => s.sampleId,
    store.reads.attemptHeadPages(run.id),
  );
  for await (const { samples, attempts } of pages) {
    fingerprints = new Map(samples.map((s) => [s.sampleId, s.fingerprint]));
    for (const attempt of attempts) fold.add(attempt);
  }
  return fold.finish().reused;
}
