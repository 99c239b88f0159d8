import { aggregate, totalUsage } from "../core/aggregate.js";
import type { PlanSummary, RunReport } from "../core/events.js";
import { keyString } from "../core/keys.js";
import { selectOutcomes } from "../core/outcomes.js";
import { planRun, type Plan } from "../core/plan.js";
import type { AttemptErrorType, Run, SampleRecord } from "../core/types.js";
import type { AttemptHead, Store } from "../store/types.js";

export interface ReportInput {
  store: Store;
  run: Run;
  /** The samples whose fingerprints define the current outcomes. */
  samples?: readonly SampleRecord[];
  /** The run's attempts, when the caller has just read them. */
  heads?: readonly AttemptHead[];
  plan: PlanSummary;
  resumed: boolean;
  /** `keyString + "#" + attempt` of the attempts this invocation committed. */
  committedNow: ReadonlySet<string>;
  wallMs: number;
}

/**
 * A run's report, computed from the stored attempts alone: the same store state always gives
 * the same figures, however many interruptions led to it.
 */
export async function buildReport(input: ReportInput): Promise<RunReport> {
  const { store, run, committedNow } = input;
  const samples = input.samples ?? (await store.getSamples(run.id));
  const heads = input.heads ?? (await store.listAttemptHeads(run.id));
  const fingerprints = new Map(samples.map((r) => [r.sample.id, r.fingerprint]));
  const outcomes = selectOutcomes(heads, fingerprints);
  const isNow = (a: AttemptHead) => committedNow.has(`${keyString(a)}#${a.attempt}`);

  const errorsByType: Partial<Record<AttemptErrorType, number>> = {};
  let scored = 0;
  for (const outcome of outcomes) {
    if (outcome.status === "scored") scored++;
    else if (outcome.error)
      errorsByType[outcome.error.type] = (errorsByType[outcome.error.type] ?? 0) + 1;
  }
  const total = samples.length * run.config.epochs;
  const errored = outcomes.length - scored;
  return {
    runId: run.id,
    evalName: run.evalName,
    status: run.status,
    resumed: input.resumed,
    plan: input.plan,
    counts: { total, scored, errored, remaining: total - scored },
    metrics: aggregate(outcomes, run.config.scorers, run.config.reducer),
    errorsByType,
    usage: {
      spentNow: totalUsage(heads.filter((a) => isNow(a) && a.provenance.kind === "executed")),
      totalSpent: totalUsage(heads.filter((a) => a.provenance.kind === "executed")),
      reused: totalUsage(outcomes.filter((a) => !isNow(a))),
    },
    executed: heads.filter(isNow).length,
    preserved: input.plan.preserved,
    wallMs: input.wallMs,
  };
}

/** The plan without its lists, for events and reports. */
export function summarizePlan(plan: Plan): PlanSummary {
  const { toExecute, samples: _samples, ...rest } = plan;
  return { ...rest, toExecute: toExecute.length };
}

/**
 * The report of a run as it stands in the store, without executing anything: what `stet show`
 * and the API's run detail print.
 *
 * @example const report = await storedReport(store, run); report.counts.remaining;
 */
export async function storedReport(store: Store, run: Run): Promise<RunReport> {
  const [samples, heads, inflight] = await Promise.all([
    store.getSamples(run.id),
    store.listAttemptHeads(run.id),
    store.listInflight(run.id),
  ]);
  const plan = planRun({ snapshot: samples, epochs: run.config.epochs, attempts: heads, inflight });
  return buildReport({
    store,
    run,
    samples,
    heads,
    plan: summarizePlan(plan),
    resumed: false,
    committedNow: new Set(),
    wallMs: 0,
  });
}
