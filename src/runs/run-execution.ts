import { StetError } from "../core/errors.js";
import type { RunReport } from "../core/events.js";
import { assertTransition } from "../core/run-status.js";
import { executeRun, type ExecuteOptions, type Execution } from "../engine/execute-run.js";
import { buildReport, summarizePlan } from "../engine/report.js";
import { settledStatus } from "./run-status.js";

/**
 * Executes a claimed run (see `executeRun`), then lets it go with the status `settledStatus`
 * gives and reports it: the one ending of every start and resume. A store that stayed unwritable
 * leaves the run `interrupted` with the failure as its note, and the failure is rethrown.
 *
 * @example const report = await runExecution(await claimResume(planned, options), options);
 */
export async function runExecution(exec: Execution, options: ExecuteOptions): Promise<RunReport> {
  const { store } = options;
  const { run, owner, plan } = exec;
  const end = await executeRun(exec, options);
  if (end.stopped?.reason === "store-unwritable") {
    await store.releaseRun(run.id, owner.token, "interrupted", end.stopped.note).catch(() => {});
    throw end.stopped.error;
  }
  const counts = await store.countKeys(run.id);
  // A signal that arrives after the last commit interrupts nothing: the run is complete.
  const status = settledStatus({ remaining: counts.remaining, cutShort: end.stopped !== null });
  assertTransition("running", status);
  const note = status === "interrupted" ? end.stopped?.note : undefined;
  if (!(await store.releaseRun(run.id, owner.token, status, note))) {
    throw new StetError(
      "E_FENCED",
      `run ${run.id} was taken over by another process before it finished`,
    );
  }
  const finished = (await store.getRun(run.id)) ?? { ...run, status };
  const report = await buildReport({
    store,
    run: finished,
    samples: plan.samples,
    fingerprintOf: end.fingerprintOf,
    plan: summarizePlan(plan),
    resumed: exec.resumed,
    isNow: end.isNow,
    wallMs: performance.now() - end.startedAt,
  });
  options.onEvent?.({ type: "run-finished", report });
  return report;
}
