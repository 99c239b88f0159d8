import { randomBytes } from "node:crypto";
import { StetError } from "../core/errors.js";
import type { Scorer, SolverFn } from "../core/eval.js";
import type { RunReport } from "../core/events.js";
import type { Json } from "../core/json.js";
import { planRun } from "../core/plan.js";
import type { Reducer, RunConfig, SampleRecord } from "../core/types.js";
import { acquireRun, assertClaimable } from "./acquire.js";
import { executeRun, type ExecuteOptions } from "./execute-run.js";
import { newOwnerIdentity } from "./owner.js";
import { buildReport, summarizePlan } from "./report.js";

/** An eval ready to execute: samples loaded, scorers normalised, defaults filled in. */
export interface EngineEval {
  name: string;
  samples: readonly SampleRecord[];
  solver: SolverFn;
  scorers: readonly Scorer[];
  epochs: number;
  reducer: Reducer;
  concurrency: number;
  timeoutMs?: number;
  retries: number;
}

export interface RunEvalOptions extends ExecuteOptions {
  eval: EngineEval;
  /** Recorded so `stet resume` can load the eval again. */
  evalPath?: string;
  /** The `--model` override, passed to solvers as `ctx.model`. */
  model?: string;
  limit?: number;
  runId?: string;
}

/**
 * Starts a new run: records its configuration and sample snapshot, then executes every key.
 *
 * @example
 * const report = await runEval({ store, eval: resolved, onEvent: (e) => render(e) });
 * report.metrics; // [{ scorer: "exact", mean: 0.82, stderr: 0.03, samples: 100 }]
 */
export async function runEval(options: RunEvalOptions): Promise<RunReport> {
  const { store, eval: ev } = options;
  const owner = newOwnerIdentity();
  const config: RunConfig = {
    evalName: ev.name,
    epochs: ev.epochs,
    concurrency: ev.concurrency,
    retries: ev.retries,
    reducer: ev.reducer,
    solver: describeSolver(ev.solver),
    scorers: ev.scorers.map((s) => s.name),
    ...(options.evalPath === undefined ? {} : { evalPath: options.evalPath }),
    ...(options.model === undefined ? {} : { model: options.model }),
    ...(ev.timeoutMs === undefined ? {} : { timeoutMs: ev.timeoutMs }),
    ...(options.limit === undefined ? {} : { limit: options.limit }),
  };
  const run = await store.createRun({
    id: options.runId ?? newRunId(),
    config,
    samples: [...ev.samples],
    owner,
  });
  const plan = planRun({ snapshot: ev.samples, epochs: ev.epochs, attempts: [], inflight: [] });
  return executeRun(
    { run, owner, plan, resumed: false, solver: ev.solver, scorers: ev.scorers },
    options,
  );
}

export interface ResumeOptions extends ExecuteOptions {
  runId: string;
  /** The eval as it is now; its samples are compared with the run's snapshot. */
  eval: EngineEval;
  rerunChanged?: boolean;
  rerunErrors?: boolean;
}

/**
 * Continues a run under its id and recorded configuration, executing only the keys without a
 * scored attempt. Refuses (`E_CHANGED_SAMPLES`) when samples changed, unless `rerunChanged`;
 * refuses (`E_RUN_ACTIVE`) while a live owner executes the run.
 *
 * @example await resumeRun({ store, runId: "r_abc", eval: resolved });
 */
export async function resumeRun(options: ResumeOptions): Promise<RunReport> {
  const { store, runId } = options;
  const run = await store.getRun(runId);
  if (!run)
    throw new StetError("E_RUN_NOT_FOUND", `no run with id "${runId}" in ${store.location}`);
  assertClaimable(run, options);

  const [snapshot, attempts, inflight] = await Promise.all([
    store.getSamples(runId),
    store.listAttemptHeads(runId),
    store.listInflight(runId),
  ]);
  const current = new Map(options.eval.samples.map((r) => [r.sample.id, r]));
  const plan = planRun({
    snapshot,
    current,
    epochs: run.config.epochs,
    attempts,
    inflight,
    ...(options.rerunErrors === undefined ? {} : { rerunErrors: options.rerunErrors }),
    ...(options.rerunChanged === undefined ? {} : { rerunChanged: options.rerunChanged }),
  });
  if (plan.changed.length > 0 && !options.rerunChanged) {
    throw new StetError(
      "E_CHANGED_SAMPLES",
      `${plan.changed.length} sample(s) changed since run ${runId} started (${preview(plan.changed)}); ` +
        "pass --rerun-changed to re-run them with their new content",
      { details: { plan: summarizePlan(plan) } },
    );
  }
  if (plan.toExecute.length === 0 && run.status !== "running") {
    const t0 = performance.now();
    const report = await buildReport({
      store,
      run,
      samples: plan.samples,
      plan: summarizePlan(plan),
      resumed: true,
      committedNow: new Set(),
      wallMs: performance.now() - t0,
    });
    options.onEvent?.({
      type: "run-started",
      runId,
      evalName: run.evalName,
      resumed: true,
      plan: report.plan,
    });
    options.onEvent?.({ type: "run-finished", report });
    return report;
  }

  const owner = newOwnerIdentity();
  await acquireRun(store, run, owner, options);
  const changedRecords = plan.samples.filter((r) => plan.changed.includes(r.sample.id));
  if (changedRecords.length > 0) await store.updateSamples(runId, owner.token, changedRecords);
  const claimed = (await store.getRun(runId)) ?? run;
  return executeRun(
    {
      run: claimed,
      owner,
      plan,
      resumed: true,
      solver: options.eval.solver,
      scorers: options.eval.scorers,
    },
    options,
  );
}

function describeSolver(solver: SolverFn): Record<string, Json> {
  return solver.describe?.() ?? { kind: "function", name: solver.name || "anonymous" };
}

/** A short, URL- and shell-safe id. */
function newRunId(): string {
  return `r_${randomBytes(8).toString("base64url").replace(/[-_]/g, "x").slice(0, 10).toLowerCase()}`;
}

function preview(ids: readonly string[]): string {
  return ids.length <= 5
    ? ids.join(", ")
    : `${ids.slice(0, 5).join(", ")} and ${ids.length - 5} more`;
}
