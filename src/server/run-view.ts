import type { CountsView, OwnerView, RunDetailView, RunSummaryView } from "../api/contract.js";
import { runModel } from "../core/run-model.js";
import { summarizeBatches } from "../core/batch.js";
import type { Owner, Run } from "../core/types.js";
import {
  readRun,
  runAsRead,
  withLiveness,
  type OwnerWithLiveness,
  type RunAsRead,
} from "../runs/read-run.js";
import { isWorking } from "../runs/run-workers.js";
import type { RunCounts, Store } from "../store/types.js";
import { redactConfig } from "./redact.js";

/**
 * An owner as the API shows it, with its liveness; never its fencing token.
 *
 * @example ownerView(run.owner, 30_000) // { host, pid, heartbeatAgeMs, alive: true, reason }
 */
export function ownerView(owner: Owner | null, staleMs: number | undefined): OwnerView | null {
  return judgedOwnerView(withLiveness(owner, staleMs === undefined ? {} : { staleMs }));
}

function judgedOwnerView(judged: OwnerWithLiveness | null): OwnerView | null {
  if (!judged) return null;
  const { host, pid, heartbeatAt, heartbeatAgeMs, alive, reason } = judged;
  return { host, pid, heartbeatAt, heartbeatAgeMs, alive, reason };
}

function countsView(counts: RunCounts): CountsView {
  const { total, scored, errored, remaining } = counts;
  return { total, done: scored, errored, remaining };
}

/**
 * A run in a listing: status, owner, model and key counts (from the store's count of attempts).
 * A run stored as running whose owner is dead is shown as it is, `interrupted` (resumable), with
 * `orphaned: true` and the owner's liveness saying why; nothing is written (`runAsRead`). A
 * distributed run (no owner: workers execute it) carries `activeWorkers` when the caller counted
 * them (`listRuns`).
 *
 * @example runSummary(run, await store.reads.countKeys(run.id), 30_000).counts // { total, done, … }
 */
export function runSummary(
  stored: Run,
  counts: RunCounts,
  staleMs: number | undefined,
  activeWorkers?: number,
): RunSummaryView {
  const read = runAsRead(stored, staleMs === undefined ? {} : { staleMs });
  return summaryView(read, counts, activeWorkers);
}

function summaryView(
  { run, owner, orphaned }: RunAsRead,
  counts: RunCounts,
  activeWorkers: number | undefined,
): RunSummaryView {
  return {
    id: run.id,
    evalName: run.evalName,
    benchmark: run.evalName,
    status: run.status,
    model: runModel(run.config) ?? null,
    note: run.note,
    createdAt: run.createdAt,
    updatedAt: run.updatedAt,
    owner: judgedOwnerView(owner),
    orphaned,
    distributed: run.config.distributed === true,
    ...(activeWorkers === undefined ? {} : { activeWorkers }),
    counts: countsView(counts),
    labels: run.labels,
  };
}

/**
 * One run in full, computed from its stored attempts on every call (nothing cached that could
 * drift): config without secrets, owner liveness, counts, the resume plan, metrics, cost and
 * retries.
 *
 * @example (await runDetail(store, "r_abc", {})).counts.remaining // keys a resume would execute
 */
export async function runDetail(
  store: Store,
  runId: string,
  options: { staleMs?: number },
): Promise<RunDetailView> {
  const { run, owner, orphaned, report, workers } = await readRun(store, runId, options);
  const batches = summarizeBatches(await store.batches.list(runId), Date.now());
  const { counts } = report;
  // A distributed run's workers, by id (never their tokens); working ones count while it runs.
  const working = run.status === "running" ? workers?.filter(isWorking).length : 0;
  const summary = summaryView(
    { run, owner, orphaned },
    {
      total: counts.total,
      scored: counts.scored,
      errored: counts.errored,
      remaining: counts.remaining,
    },
    workers && working,
  );
  return {
    ...summary,
    // Limited keys are scored ones (done), told apart from errors by the limit that ended them.
    ...(counts.limited > 0 && {
      counts: { ...summary.counts, limited: counts.limited, limitedBy: report.limitedBy ?? {} },
    }),
    ...(workers ? { workers } : {}),
    ...(batches ? { batches } : {}),
    ...(report.rateLimits ? { rateLimits: report.rateLimits } : {}),
    config: redactConfig(run.config),
    plan: report.plan,
    metrics: report.metrics,
    ...(report.agreement ? { agreement: report.agreement } : {}),
    distribution: report.distribution,
    errorsByType: report.errorsByType,
    // The same with the first few errored keys and their messages (the route redacts them).
    errors: report.errors,
    // No invocation is in progress from the reader's point of view: what the run has spent in
    // all, and what its standing outcomes are worth (a re-run would buy them again).
    cost: { spent: report.usage.totalSpent, reused: report.usage.reused },
    // Model requests re-sent over every stored attempt and scoring, and keys that needed another
    // attempt: sums of the stored rows, like the spend.
    retries: report.retries,
  };
}
