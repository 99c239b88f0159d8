import { randomBytes } from "node:crypto";
import { StetError } from "../core/errors.js";
import type { ModelCaller, Scorer, SolverFn } from "../core/eval.js";
import type { RunReport } from "../core/events.js";
import type { Json } from "../core/json.js";
import { planRun, type Plan } from "../core/plan.js";
import type { AttemptDraft, Reducer, Run, RunConfig, SampleRecord } from "../core/types.js";
import type { AttemptHead, Store } from "../store/types.js";
import { acquireRun, assertClaimable } from "./acquire.js";
import { executeRun, type ExecuteOptions, type Execution } from "./execute-run.js";
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
  /** What `ctx.chat` calls; without it `ctx.chat` fails the attempt (a solver error). */
  callModel?: ModelCaller;
}

export interface RunEvalOptions extends ExecuteOptions {
  eval: EngineEval;
  /** Recorded so `stet resume` can load the eval again. */
  evalPath?: string;
  /** Recorded so `stet resume` goes on appending to the same Results JSONL. */
  output?: string;
  /** The `--model` override, passed to solvers as `ctx.model`. */
  model?: string;
  limit?: number;
  runId?: string;
  /**
   * Attempts recorded, all or nothing, right after the run is created and before it is planned,
   * so their keys are not executed: the completed results of a partial ResultSet (`stet run
   * --resume-from`). Give them `provenance: { kind: "imported", source }`.
   */
  seed?: AttemptDraft[];
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
    ...(options.output === undefined ? {} : { output: options.output }),
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
  const seeded = options.seed?.length
    ? await seedRun(store, run.id, owner.token, options.seed)
    : [];
  const plan = planRun({ snapshot: ev.samples, epochs: ev.epochs, attempts: seeded, inflight: [] });
  return executeRun(
    {
      run,
      owner,
      plan,
      resumed: false,
      solver: ev.solver,
      scorers: ev.scorers,
      ...(ev.callModel ? { callModel: ev.callModel } : {}),
    },
    options,
  );
}

export interface ResumeOptions extends ExecuteOptions {
  runId: string;
  /**
   * The eval as it is now: its samples are compared with the run's snapshot, its solver and
   * scorers execute. Everything else (epochs, concurrency, retries, timeout, reducer, model)
   * comes from the run's recorded configuration.
   */
  eval: Pick<EngineEval, "samples" | "solver" | "scorers" | "callModel">;
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
  const planned = await planResume(options);
  const { run, plan } = planned;
  // Nothing to execute and the status already says so: report without claiming. A run whose
  // status lags its attempts (every key scored, but interrupted or running under a dead owner)
  // is claimed and released below, which settles it as completed.
  const settled = run.status === "completed" || (run.status === "errored" && plan.erroredKept > 0);
  if (plan.toExecute.length === 0 && settled) {
    const t0 = performance.now();
    const report = await buildReport({
      store: options.store,
      run,
      samples: plan.samples,
      heads: planned.attempts,
      plan: summarizePlan(plan),
      resumed: true,
      wallMs: performance.now() - t0,
    });
    options.onEvent?.({
      type: "run-started",
      runId: run.id,
      evalName: run.evalName,
      resumed: true,
      plan: report.plan,
    });
    options.onEvent?.({ type: "run-finished", report });
    return report;
  }
  return executeRun(await claimResume(options, planned), options);
}

/** A resume planned against the run as it was read, before claiming it. */
export interface PlannedResume {
  run: Run;
  plan: Plan;
  /** The attempts the plan was made from. */
  attempts: AttemptHead[];
}

/**
 * The first half of `resumeRun`: reads the run and plans what it still has to execute, without
 * claiming it. Throws `E_RUN_NOT_FOUND`, `E_RUN_ACTIVE` while a live owner executes the run, and
 * `E_CHANGED_SAMPLES`. A server calls it (then `claimResume`) to answer with a status code
 * before it opens a stream.
 *
 * @example
 * const planned = await planResume({ store, runId, eval: resolved });
 * if (planned.plan.toExecute.length > 0) await executeRun(await claimResume(opts, planned), opts);
 */
export async function planResume(options: ResumeOptions): Promise<PlannedResume> {
  const { store, runId } = options;
  const run = await store.getRun(runId);
  if (!run)
    throw new StetError("E_RUN_NOT_FOUND", `no run with id "${runId}" in ${store.location}`);
  assertClaimable(run, options);

  const [fingerprints, attempts, inflight] = await Promise.all([
    store.listSampleFingerprints(runId),
    store.listAttemptHeads(runId),
    store.listInflight(runId),
  ]);
  const current = new Map(options.eval.samples.map((r) => [r.sample.id, r]));
  const snapshot = await snapshotRecords(store, runId, fingerprints, current);
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
  return { run, plan, attempts };
}

/**
 * The run's snapshot as records. An entry whose fingerprint the current dataset matches is the
 * dataset's record (same sha256, same content); the stored copies are read only when some sample
 * changed or left the dataset, so planning a large unchanged run parses no sample JSON.
 */
async function snapshotRecords(
  store: Store,
  runId: string,
  fingerprints: readonly { sampleId: string; fingerprint: string }[],
  current: ReadonlyMap<string, SampleRecord>,
): Promise<SampleRecord[]> {
  const same = (e: { sampleId: string; fingerprint: string }) =>
    current.get(e.sampleId)?.fingerprint === e.fingerprint;
  if (fingerprints.every(same)) return fingerprints.map((e) => current.get(e.sampleId)!);
  const stored = new Map((await store.getSamples(runId)).map((r) => [r.sample.id, r]));
  return fingerprints.map((e) => (same(e) ? current.get(e.sampleId)! : stored.get(e.sampleId)!));
}

/**
 * The second half of `resumeRun`: claims the planned run with the store's compare-and-set on the
 * owner token the plan judged dead, and returns what `executeRun` executes. Of any number of
 * concurrent claimants exactly one gets an execution; the others get `E_RUN_ACTIVE`.
 *
 * @example const exec = await claimResume(options, await planResume(options));
 */
export async function claimResume(
  options: ResumeOptions,
  planned: PlannedResume,
): Promise<Execution> {
  const { store, runId } = options;
  const { run, plan } = planned;
  const owner = newOwnerIdentity();
  await acquireRun(store, run, owner, options);
  const changedRecords = plan.samples.filter((r) => plan.changed.includes(r.sample.id));
  if (changedRecords.length > 0) await store.updateSamples(runId, owner.token, changedRecords);
  const claimed = (await store.getRun(runId)) ?? run;
  return {
    run: claimed,
    owner,
    plan,
    resumed: true,
    solver: options.eval.solver,
    scorers: options.eval.scorers,
    ...(options.eval.callModel ? { callModel: options.eval.callModel } : {}),
  };
}

/** Records the seed; if that fails, the new run is released (resumable) before rethrowing. */
async function seedRun(store: Store, runId: string, token: string, seed: AttemptDraft[]) {
  try {
    return await store.recordAttempts(runId, token, seed);
  } catch (error) {
    await store.releaseRun(runId, token, "interrupted", "seeding the run failed").catch(() => {});
    throw error;
  }
}

function describeSolver(solver: SolverFn): Record<string, Json> {
  return solver.describe?.() ?? { kind: "function", name: solver.name || "anonymous" };
}

/**
 * A short, URL- and shell-safe run id.
 *
 * @example newRunId() // "r_k3xq9amz0b"
 */
export function newRunId(): string {
  return `r_${randomBytes(8).toString("base64url").replace(/[-_]/g, "x").slice(0, 10).toLowerCase()}`;
}

function preview(ids: readonly string[]): string {
  return ids.length <= 5
    ? ids.join(", ")
    : `${ids.slice(0, 5).join(", ")} and ${ids.length - 5} more`;
}
