import { addUsage, emptyUsage } from "../core/aggregate.js";
import { StetError } from "../core/errors.js";
import type { FallbackOutcome, RunReport } from "../core/events.js";
import { keyString } from "../core/keys.js";
import { listedKeys } from "../core/plan.js";
import { createSecretRedactor } from "../core/secrets.js";
import { assertTransition } from "../core/run-status.js";
import type { AttemptError, Run } from "../core/types.js";
import {
  executeRun,
  type ExecuteOptions,
  type Execution,
  type ExecutionEnd,
  type StopCause,
} from "../engine/execute-run.js";
import { takenOver } from "../engine/acquire.js";
import { budgetNote } from "../engine/budget.js";
import { figuresReport } from "../engine/figures-report.js";
import { buildReport, summarizePlan } from "../engine/report.js";
import type { AttemptHead } from "../store/types.js";
import { runSecrets } from "./run-secrets.js";
import { settledStatus } from "./run-status.js";

export interface RunExecutionOptions extends ExecuteOptions {
  /** Work of the caller's while the run is still owned, after the execution drained. */
  beforeRelease?: (end: ExecutionEnd) => Promise<void>;
  /**
   * The report of the run as the execution left it, before its stop and journal are added:
   * a rescore's (`rescoreReport`, whose plan lists no sample). Default: `executionReport`'s.
   */
  report?: (run: Run, end: ExecutionEnd) => Promise<RunReport>;
}

/**
 * Executes a claimed run (see `executeRun`), then lets it go with the status `settledStatus`
 * gives and reports it: the one ending of every start and resume. A store that stayed unwritable
 * leaves the run `interrupted` with the failure as its note, and the failure is rethrown. An
 * endpoint whose first samples all failed alike (the engine's `misconfigured` stop) leaves it
 * `interrupted` (cut short, by `settledStatus`) with the cause as its note, the attempts made
 * stored, and throws `E_ENDPOINT` naming the request, the status and what the server said. Any
 * other error on the way (a bug, a listener that threw, a store read that failed) leaves the run
 * `interrupted` with the error as its note, and is rethrown: never `running` with no one running it.
 *
 * @example const report = await runExecution(await claimResume(planned, options), options);
 */
export async function runExecution(
  exec: Execution,
  options: RunExecutionOptions,
): Promise<RunReport> {
  try {
    return await executeAndSettle(exec, options);
  } catch (error) {
    // A compare-and-set on this owner's token: a no-op when the run was released already (the
    // paths above release before they throw) or taken over by another owner.
    const { store } = options;
    const message = error instanceof Error ? error.message : String(error);
    const note = createSecretRedactor(runSecrets(store, options.secrets)).text(
      `stopped by an error: ${message}`,
    ).value;
    await store.runs.release(exec.run.id, exec.owner.token, "interrupted", note).catch(() => {});
    throw error;
  }
}

async function executeAndSettle(exec: Execution, options: RunExecutionOptions): Promise<RunReport> {
  const { store } = options;
  const { run, owner, plan } = exec;
  const end = await executeRun(exec, { ...options, secrets: runSecrets(store, options.secrets) });
  if (end.stopped?.reason === "store-unwritable") {
    await store.runs.release(run.id, owner.token, "interrupted", end.stopped.note).catch(() => {});
    throw await withStoredSpend(end.stopped.error!, () =>
      options.report
        ? options.report(run, end)
        : buildReport({
            store,
            run,
            ...heldSamples(plan, end),
            plan: summarizePlan(plan),
            resumed: exec.resumed,
            wallMs: 0,
          }),
    );
  }
  await options.beforeRelease?.(end);
  // Retention: only committed attempts' entries go, never open ones, which a resume replays.
  if (exec.journalKeep !== undefined && exec.journalKeep !== "all") {
    await store.journal.prune(run.id, exec.journalKeep);
  }
  const counts = await store.reads.countKeys(run.id);
  // A signal that arrives after the last commit interrupts nothing: the run is complete. A re-run
  // cut short leaves keys that have an outcome but were asked to run again: resumable.
  const cutShort = end.stopped !== null;
  const rerunLeft = cutShort ? await pendingReruns(store, exec) : 0;
  const status = settledStatus({ remaining: counts.remaining + rerunLeft, cutShort });
  assertTransition("running", status);
  const note = status === "interrupted" ? end.stopped?.note : undefined;
  if (!(await store.runs.release(run.id, owner.token, status, note))) {
    throw await takenOver(store, run.id);
  }
  const misconfiguration = end.stopped?.misconfiguration;
  if (misconfiguration && status !== "completed") {
    throw endpointError(run.id, misconfiguration, counts.remaining);
  }
  const finished = (await store.runs.get(run.id)) ?? { ...run, status };
  const stopped = { stopped: status === "interrupted" ? end.stopped : null };
  const report = options.report
    ? withStop(withJournal(await options.report(finished, end), end), stopped.stopped, exec)
    : await executionReport(store, finished, exec, end, stopped);
  options.onEvent?.({ type: "run-finished", report });
  return report;
}

/**
 * The report of an execution that ended, from the stored attempts: with what this invocation
 * committed (`end.isNow`), what its journal replayed, why it stopped (`stopped`) and its cap.
 */
export async function executionReport(
  store: ExecuteOptions["store"],
  run: Execution["run"],
  exec: Execution,
  end: ExecutionEnd,
  extra: {
    stopped: StopCause | null;
    isOthers?: (attempt: AttemptHead) => boolean;
    /** A worker whose plan lists no sample: the same, by the sample's place (see ReportInput). */
    isOthersAt?: (index: number | undefined, attempt: AttemptHead) => boolean;
  },
): Promise<RunReport> {
  const built =
    (await freshReport(store, run, exec, end)) ??
    (await buildReport({
      store,
      run,
      ...heldSamples(exec.plan, end),
      plan: summarizePlan(exec.plan),
      resumed: exec.resumed,
      isNow: end.isNow,
      ...(extra.isOthers ? { isOthers: extra.isOthers } : {}),
      ...(extra.isOthersAt ? { isOthersAt: extra.isOthersAt } : {}),
      scorings: end.scorings,
      wallMs: performance.now() - end.startedAt,
    }));
  return withStop(withJournal(built, end), extra.stopped, exec);
}

/**
 * The report of a fresh execution (`Execution.fresh`: every stored row is this invocation's)
 * from the run's figures instead of a fold of every attempt, when nothing it committed carries
 * spend bought before (no reply cache, nothing replayed from the journal): what `buildReport`
 * folds with every attempt now, field for field. Undefined otherwise (the caller folds).
 */
async function freshReport(
  store: ExecuteOptions["store"],
  run: Execution["run"],
  exec: Execution,
  end: ExecutionEnd,
): Promise<RunReport | undefined> {
  if (!exec.fresh || exec.cache || end.journal.replayed > 0 || end.scorings.committed > 0) {
    return undefined;
  }
  const report = await figuresReport(store, run, { invocation: true, allNow: true });
  if (!report) return undefined;
  const { plan } = exec;
  const wallMs = performance.now() - end.startedAt;
  return { ...report, plan: summarizePlan(plan), preserved: plan.preserved, wallMs };
}

/**
 * The samples a report of the execution folds with: the plan's, or none when it holds none (an
 * execution from the snapshot's pages, a new run's or a resume's), so that the report reads them
 * from the store a page at a time, and asks which attempts are now by their sample's place.
 */
function heldSamples(plan: Execution["plan"], end: ExecutionEnd) {
  if (listedKeys(plan) === undefined) return { isNowAt: end.isNowAt };
  return { samples: plan.samples, fingerprintOf: end.fingerprintOf };
}

/**
 * Keys of the plan's re-run requests without a scored attempt after the one they follow. A plan
 * that counts its keys only (from the snapshot's pages) lists no requests: the run's own that are
 * not done are counted by the store (`reads.rerunFacts`).
 */
async function pendingReruns(store: ExecuteOptions["store"], exec: Execution): Promise<number> {
  const { plan, run } = exec;
  if (listedKeys(plan) === undefined) {
    return (await store.reads.rerunFacts(run.id)).reduce((sum, fact) => sum + fact.keys, 0);
  }
  if (plan.rerunAfter.size === 0) return 0;
  const fingerprintOf = new Map(plan.samples.map((r) => [r.sample.id, r.fingerprint]));
  const done = new Set<string>();
  for (const a of await store.reads.listAttemptHeads(run.id)) {
    const k = keyString(a);
    const after = plan.rerunAfter.get(k);
    if (after === undefined || a.status !== "scored" || a.attempt <= after) continue;
    if (fingerprintOf.get(a.sampleId) === a.fingerprint) done.add(k);
  }
  return plan.rerunAfter.size - done.size;
}

/** The report with what the step journal replayed, when it replayed anything. */
function withJournal(report: RunReport, end: ExecutionEnd): RunReport {
  const { replayed, diverged, reused } = end.journal;
  if (replayed === 0 && diverged === 0) return report;
  const total = emptyUsage();
  for (const usage of reused) addUsage(total, usage);
  return { ...report, journal: { replayed, diverged, reused: total } };
}

/**
 * The report with why the invocation stopped (when it left the run interrupted) and the spend
 * cap it ran under: the CLI exits 6 for `stopped.reason === "budget"`. A stop at the cap says the
 * report's own total, the stored rows' sum, so the note and the figures never disagree.
 */
function withStop(report: RunReport, stopped: StopCause | null, exec: Execution): RunReport {
  const { cap } = exec;
  // What is known: the cap counts known costs only (an unpriced spend it cannot see).
  const spentUsd = report.usage.totalSpent.costUsd ?? 0;
  const note =
    stopped?.reason === "budget" && cap ? budgetNote(spentUsd, cap.maxCostUsd) : stopped?.note;
  return {
    ...report,
    ...(stopped ? { stopped: { reason: stopped.reason, note: note ?? stopped.note } } : {}),
    ...(cap
      ? { budget: { maxCostUsd: cap.maxCostUsd, spentUsd, reached: stopped?.reason === "budget" } }
      : {}),
  };
}

/**
 * The store-unwritable error with the run's stored spend added to its fallback outcome, so the
 * total on the run can be told (stored attempts plus those in the fallback file or lost). A full
 * or read-only store can usually still be read; when it cannot, the error goes as it is.
 */
export async function withStoredSpend(
  error: StetError,
  read: () => Promise<RunReport>,
): Promise<StetError> {
  const outcome = error.details?.fallback as FallbackOutcome | undefined;
  const report = await read().catch(() => null);
  if (!outcome || !report) return error;
  return new StetError(error.code, error.message, {
    cause: error.cause,
    details: { ...error.details, fallback: { ...outcome, stored: report.usage.totalSpent } },
  });
}

/**
 * The error of a run stopped because its endpoint failed its first samples alike: what failed
 * (the request with its URL, the status and the server's message, or the refused connection)
 * and what to check.
 *
 * @example endpointError("r_1", { error, samples: 3 }, 97).message
 * // "run r_1 stopped early: its first 3 samples all failed with the same error, …"
 */
export function endpointError(
  runId: string,
  misconfiguration: NonNullable<StopCause["misconfiguration"]>,
  remaining: number,
): StetError {
  const { error, samples } = misconfiguration;
  const fault = error.configuration;
  return new StetError(
    "E_ENDPOINT",
    `run ${runId} stopped early: its first ${samples} samples all failed with the same error, ` +
      `which no other sample would get past:\n  ${error.message}\n${checkHint(error)}`,
    {
      details: {
        runId,
        remaining,
        ...(fault === undefined ? {} : { cause: fault.cause, url: fault.url }),
        ...(error.status === undefined ? {} : { status: error.status }),
      },
    },
  );
}

function checkHint(error: AttemptError): string {
  const fault = error.configuration;
  switch (fault?.cause) {
    case "connection-refused":
      return `Nothing is listening at ${fault.url}: start the server, or fix the solver's baseURL.`;
    case "host-not-found":
      return `The host of ${fault.url} does not resolve: fix the solver's baseURL.`;
    case "invalid-url":
      return "Set the solver's baseURL (or OPENAI_BASE_URL) to an http:// or https:// URL.";
    default:
      if (error.status === 401) return "Check the API key (OPENAI_API_KEY or the solver's apiKey).";
      if (error.status === 403) return "Check that the API key may use this model and endpoint.";
      if (error.status === 404)
        return "Check the model name and the solver's baseURL (often …/v1).";
      return "Check the solver's endpoint: baseURL, API key and model.";
  }
}
