import { withFlagLimit, type RateLimit } from "../core/rate-limits.js";
import { StetError } from "../core/errors.js";
import type { EngineEval } from "../core/eval.js";
import type { PlanSummary, RunReport } from "../core/events.js";
import { keyString } from "../core/keys.js";
import { listedKeys, planRun, settledPlan, type ResumePlan } from "../core/plan.js";
import type { RerunRecord, Run, RunConfig } from "../core/types.js";
import { acquireRun, takenOver, takeoverRefusal } from "../engine/acquire.js";
import type { SpendCap } from "../engine/budget.js";
import type { ExecuteOptions, Execution } from "../engine/execute-run.js";
import { newOwnerIdentity } from "../engine/owner.js";
import { SnapshotKeys, type SnapshotResume } from "../engine/snapshot-keys.js";
import { summarizePlan } from "../engine/report.js";
import type { AttemptHead } from "../store/types.js";
import type { LoadedEvalFile } from "../eval/load-eval-file.js";
import { findEvalSource, type EvalLookup } from "./find-eval.js";
import { checkEval, recordedChange, withIdentity } from "./run-identity.js";
import {
  askedNow,
  asksRerun,
  pagedReruns,
  plansSparse,
  preview,
  recordedRerunsOf,
  rerunRequests,
} from "./rerun-requests.js";
import { runSecrets } from "./run-secrets.js";
import { unknownRun } from "./require-run.js";
import { readResumeInputs, settledInputs, settledStamp } from "./resume-inputs.js";
import { runExecution } from "./run-execution.js";
import { pagedRescoreUnits, rescoreUnits } from "./rescore-units.js";
import { resumeBatch } from "./run-batches.js";
import { resumeCap } from "./spend-cap.js";
import { wholeEval } from "./paged-eval.js";
import { mayOweReuse, pagedResume, pagedResumeAsk } from "./paged-resume.js";
import { settledStatus } from "./run-status.js";
import { settledReport } from "./settled-report.js";
import { markSeeded, owedReuse, seedReused, type PlannedReuse } from "./reuse-run.js";

/**
 * What a resume executes with: the eval as it is now (its samples are compared with the run's,
 * its solver and scorers, name and epochs with the run's identity; a name or epochs left out are
 * taken to be the run's).
 */
export type ResumeEval = Pick<EngineEval, "samples" | "solver" | "scorers" | "callModel"> &
  Partial<
    Pick<
      EngineEval,
      "name" | "epochs" | "journalKeep" | "limits" | "cache" | "rateLimits" | "batch"
    >
  >;

export interface ResumeOptions extends ExecuteOptions {
  runId: string;
  /**
   * The eval as it is now: its samples are compared with the run's snapshot, its solver and
   * scorers execute. Everything else (epochs, concurrency, retries, timeout, reducer, model)
   * comes from the run's recorded configuration. Default: the one `findEval` finds for the run
   * (`evalFile`, then `registry`, then the file the run was started from).
   */
  eval?: ResumeEval;
  evalFile?: string;
  registry?: EvalLookup;
  /** Execute only a registered eval, never a file from elsewhere (see FindEvalOptions). */
  onlyRegistered?: boolean;
  /** A registered eval the caller asks for by name instead of the run's (see FindEvalOptions). */
  loaded?: LoadedEvalFile;
  /** How long loading the eval module may take (`--load-timeout`). */
  loadTimeoutMs?: number;
  rerunChanged?: boolean;
  rerunErrors?: boolean;
  /**
   * This invocation's spend cap on the run's total, USD (`--max-cost`): overrides the cap the run
   * was started with, which is otherwise kept. It is not recorded.
   */
  maxCost?: number;
  /** `--cache` / `--no-cache`: overrides the eval's `cache` for this invocation. */
  cache?: boolean;
  /** `--rpm` / `--tpm`: the main model's rate limit for this invocation (see withFlagLimit). */
  rateLimit?: RateLimit;
  /** `--batch`: the provider batches on for this invocation (a run with submissions always adopts them). */
  batch?: boolean;
  /**
   * Go on although the eval's solver (model, parameters) differs from the run's identity; the new
   * identity and the differences are recorded in the run's history. Not for another eval's name,
   * nor for changed scorers of a run with scored attempts (`stet rescore` first): see `checkEval`.
   */
  allowEvalChange?: boolean;
  /** The model asked for (`--model`): refused unless it is the run's. */
  model?: string;
  /** Sample ids whose keys (every epoch) execute again as new attempts, scored or not. */
  rerun?: readonly string[];
  /** Execute again every key whose outcome scores below 1 on some scorer. */
  rerunFailed?: boolean;
  /** Execute again every key whose outcome a per-sample limit ended (`--rerun-limited`). */
  rerunLimited?: boolean;
  /**
   * Plan for a worker of a distributed run (`workRun`), which executes leased keys and claims no
   * ownership; without it a distributed run is refused (`distributed`).
   */
  asWorker?: boolean;
  /**
   * A dataset file of at least `minBytes` that still has the run's stamp is not read: the resume
   * executes from the run's snapshot a page at a time (`pagedResume`), holding no list of keys or
   * samples. `stet resume` asks it for files of `PAGED_DATASET_BYTES`.
   */
  paged?: { minBytes: number };
}

/** A resume planned against the run as it was read, before claiming it. */
export interface PlannedResume {
  run: Run;
  /** Listed, or (a resume from the snapshot's pages, with `keys`) counted only. */
  plan: ResumePlan;
  /**
   * The attempts the plan was made from: every attempt of the run, or (a sparse plan, `plan.ts`'s
   * `open`) those of the samples that had a key to settle.
   */
  attempts: AttemptHead[];
  eval: ResumeEval;
  /** The spend cap the resume executes under (on the run's stored spend, read as it executes). */
  cap?: SpendCap;
  /**
   * The configuration the claim records (`updateRunConfig`) before anything executes: the eval's
   * identity (first recorded, or changed and accepted, with a history entry). Absent when the
   * recorded one stands.
   */
  config?: RunConfig;
  /** The re-run requests the claim records with it; absent when those recorded stand. */
  reruns?: RerunRecord;
  /**
   * Scorers an accepted change altered (a run with no scored attempt): the scorer errors to score
   * again run them even where the attempt has a score of theirs, the old scorer's.
   */
  changedScorers?: string[];
  /** Reused keys a kill kept the run's start from seeding (`owedReuse`): seeded by the claim. */
  reuse?: PlannedReuse;
  /**
   * A resume from the snapshot's pages (`pagedResume`; its plan counts its keys only): what
   * `SnapshotKeys` plans each page with.
   */
  keys?: SnapshotResume;
  /**
   * `stet resume --detach`: once every key executed waits on a provider batch, the execution
   * stops and leaves the run waiting (see `Execution.detach`). Only with batches (`resumeBatch`).
   */
  detach?: boolean;
}

/** Why a resume will not execute anything; `error` is what a shell throws to say so. */
export type ResumeRefusal =
  | { reason: "run-not-found"; error: StetError }
  | { reason: "run-active"; error: StetError }
  | { reason: "changed-samples"; error: StetError; plan: PlanSummary }
  /** The eval (or `--model`) differs from the run's identity, without `allowEvalChange`. */
  | { reason: "eval-changed"; error: StetError }
  /** `rerun` names sample ids the run does not have (`E_USAGE`). */
  | { reason: "invalid-rerun"; error: StetError }
  /** A distributed run: its workers execute it (`workRun`), nobody claims it (`E_DISTRIBUTED`). */
  | { reason: "distributed"; error: StetError }
  /** Every key has its outcome; `resume` still settles a run whose status lags (`settleResume`). */
  | { reason: "nothing-to-resume"; error: StetError; resume: PlannedResume };

export type ResumePlanning =
  { ok: true; resume: PlannedResume } | { ok: false; refusal: ResumeRefusal };

/**
 * The first half of a resume: reads the run, finds its eval and plans what it still has to
 * execute, with no side effects. Returns the plan, or a typed refusal (unknown run, a live owner,
 * an eval that is not the run's (`checkEval`), changed samples without `rerunChanged`, nothing to
 * resume), so a server can answer with a status code before it opens a stream and the CLI can
 * print the plan. Then `claimResume` and `runExecution` (or `executeResume`) do the rest.
 *
 * @example
 * const planning = await planResume({ store, runId: "r_abc" });
 * if (planning.ok) await executeResume(planning.resume, options);
 */
export async function planResume(options: ResumeOptions): Promise<ResumePlanning> {
  const { store, runId } = options;
  const run = await store.runs.get(runId);
  if (!run) return refuse({ reason: "run-not-found", error: unknownRun(store, runId) });
  if (run.config.distributed && !options.asWorker) {
    const error = new StetError(
      "E_DISTRIBUTED",
      `run ${runId} is a distributed run: workers execute it, no single owner. ` +
        `Resume it with \`stet resume ${runId}\` (which joins it as a worker) or \`stet worker --run ${runId}\``,
      { details: { runId } },
    );
    return refuse({ reason: "distributed", error });
  }
  const active = await takeoverRefusal(store, run, options);
  if (active) return refuse({ reason: "run-active", error: active });

  // Re-run requests recorded earlier read their samples' attempts (up to a few hundred samples);
  // a new one is planned a page at a time, or reads every attempt. A worker's report tells other
  // workers' attempts from those its plan read: unless paged, it reads them all.
  const recorded = await recordedRerunsOf(store, run.id);
  const sparse = plansSparse(options, recorded);
  // A complete run whose dataset file is unchanged is planned reading neither; an unfinished
  // one of a large file executes from its snapshot, a page at a time (the file, unless it is
  // unchanged, compared with the snapshot a page at a time too).
  const stamp =
    sparse && !options.asWorker && !options.eval
      ? await settledStamp(store, run, recorded.any)
      : undefined;
  // Re-run requests, recorded or asked now, are planned a page at a time too (not a worker's).
  const pageable =
    (!options.asWorker || (!asksRerun(options) && !recorded.any)) && !mayOweReuse(run);
  const pagedAsk =
    stamp === undefined && !options.eval ? pagedResumeAsk(run, options, pageable) : undefined;
  const found = options.eval
    ? undefined
    : await findEvalSource(run, stampOptions(options, stamp, pagedAsk));
  const settled = stamp !== undefined && found?.unchanged === true;
  const pages = pagedAsk && found?.eval.pages;
  const asked = pages ? await askedNow(store, run, options) : undefined;
  if (asked?.ok === false) return refuse({ reason: "invalid-rerun", error: asked.error });
  const unchanged = found?.unchanged === true;
  const paged =
    pages && asked?.ok
      ? await pagedResume(store, run, { unchanged, pages }, { ...options, ask: asked.ask })
      : undefined;
  // Pages not planned a page at a time are loaded whole, as a smaller file is.
  const ev: ResumeEval =
    options.eval ?? (found!.eval.pages && !paged ? await wholeEval(found!.eval) : found!.eval);
  const current =
    found && !found.eval.pages
      ? found.samplesById
      : new Map(ev.samples.map((r) => [r.sample.id, r]));
  const inputs =
    settled || paged
      ? settledInputs(paged?.resume.inflight, paged?.scoredAny ?? true)
      : await readResumeInputs(store, run, current, sparse && !options.asWorker, recorded.samples);
  const { snapshot, attempts, inflight } = inputs;
  const identity = checkEval({
    run,
    eval: ev,
    evalPath: found?.path,
    use: options.asWorker ? "work" : "resume",
    scoredAny: inputs.scoredAny,
    allowEvalChange: options.allowEvalChange,
    model: options.model,
    secrets: runSecrets(store, options.secrets),
    evalFile: options.evalFile,
  });
  if (!identity.ok) return refuse({ reason: "eval-changed", error: identity.error });
  // A paged plan's pages read their own requests: the recorded ones stand, an ask is added.
  const rerun = paged
    ? pagedReruns(asked?.ok ? asked.ask : undefined)
    : rerunRequests(run, await recorded.all(), snapshot, attempts, options);
  if (!rerun.ok) return refuse({ reason: "invalid-rerun", error: rerun.error });
  const plan: ResumePlan = paged
    ? paged.plan
    : settled
      ? settledPlan(run.sampleCount * run.config.epochs)
      : planRun({
          snapshot,
          // A snapshot made of the dataset's own records has nothing for planRun to compare.
          ...(inputs.allCurrent ? {} : { current }),
          epochs: run.config.epochs,
          attempts,
          inflight,
          ...(inputs.open ? { open: inputs.open } : {}),
          ...(rerun.requests.length === 0 ? {} : { rerun: rerun.requests }),
          ...(options.rerunErrors === undefined ? {} : { rerunErrors: options.rerunErrors }),
          ...(options.rerunChanged === undefined ? {} : { rerunChanged: options.rerunChanged }),
        });
  if (plan.changed.length > 0 && !options.rerunChanged) {
    const summary = summarizePlan(plan);
    const error = new StetError(
      "E_CHANGED_SAMPLES",
      `${plan.changed.length} sample(s) changed since run ${runId} started (${preview(plan.changed)}); ` +
        "pass --rerun-changed to re-run them with their new content",
      { details: { plan: summary } },
    );
    return refuse({ reason: "changed-samples", error, plan: summary });
  }
  // A run started with --reuse whose seeding a kill cut short: its untried keys the source covers
  // are seeded by the claim, not executed.
  // (A paged resume is never one: see mayOweReuse.)
  const listed = listedKeys(plan);
  const tried = new Set(attempts.map(keyString));
  const untried = listed?.filter((k) => !tried.has(keyString(k)));
  const reuse = untried && (await owedReuse(store, run, ev, untried));
  if (reuse && listed) {
    const owed = new Set(reuse.origins.map(keyString));
    plan.toExecute = listed.filter((k) => !owed.has(keyString(k)));
  }
  const cap = resumeCap(run, options.maxCost);
  const accepted =
    run.config.identity && identity.differences.length === 0
      ? run.config
      : withIdentity(run.config, identity.identity, identity.differences);
  const config = recordedChange(run.config, accepted, plan.changed.length > 0);
  const rateLimits = withFlagLimit(ev.rateLimits, options.rateLimit, run.config.model);
  const resume: PlannedResume = {
    run,
    plan,
    attempts,
    eval: rateLimits ? { ...ev, rateLimits } : ev,
    ...(cap ? { cap } : {}),
    ...(config ? { config } : {}),
    ...(rerun.record ? { reruns: rerun.record } : {}),
    ...(identity.changedScorers.length > 0 ? { changedScorers: identity.changedScorers } : {}),
    ...(reuse ? { reuse } : {}),
    ...(paged ? { keys: paged.resume } : {}),
  };
  if (plan.toExecute.length === 0 && plan.toRescore.length === 0 && !reuse) {
    const error = new StetError(
      "E_NOTHING_TO_RESUME",
      `run ${runId} has nothing to resume: all ${plan.total} keys have ${plan.erroredKept > 0 ? "an outcome" : "a scored attempt"}`,
    );
    return refuse({ reason: "nothing-to-resume", error, resume });
  }
  return { ok: true, resume };
}

/**
 * Claims a planned run with the store's compare-and-set on the owner token the plan judged dead,
 * and returns what `runExecution` executes. Of any number of concurrent claimants, in this process
 * or others, exactly one gets an execution; the others get `E_RUN_ACTIVE`.
 *
 * @example const exec = await claimResume(planning.resume, options);
 */
export async function claimResume(
  resume: PlannedResume,
  options: ExecuteOptions,
): Promise<Execution> {
  const { store } = options;
  const { run, plan, eval: ev } = resume;
  const owner = newOwnerIdentity();
  await acquireRun(store, run, owner, options);
  const { config = run.config, reruns } = resume;
  if (
    (resume.config || reruns) &&
    !(await store.runs.updateConfig(run.id, owner.token, config, reruns))
  )
    throw await takenOver(store, run.id);
  if (resume.reuse) await seedReused(store, run.id, owner.token, resume.reuse);
  // Planned against listed keys (`mayOweReuse`): whatever was owed is stored now.
  if (mayOweReuse(run)) await markSeeded(store, { ...run, config }, owner.token);
  const changed = new Set(plan.changed);
  const changedRecords = plan.samples.filter((r) => changed.has(r.sample.id));
  if (changedRecords.length > 0)
    await store.runs.updateSamples(run.id, owner.token, changedRecords);
  const claimed = (await store.runs.get(run.id)) ?? run;
  const exec: Execution = {
    run: claimed,
    owner,
    plan,
    resumed: true,
    solver: ev.solver,
    scorers: ev.scorers,
    ...(resume.cap ? { cap: resume.cap } : {}),
    ...(ev.journalKeep ? { journalKeep: ev.journalKeep } : {}),
    ...(ev.cache ? { cache: ev.cache } : {}),
    ...(ev.rateLimits ? { rateLimits: ev.rateLimits } : {}),
    ...(await resumeBatch(store, run.id, ev)),
    ...(resume.keys
      ? { keys: new SnapshotKeys(store, run.id, run.config.epochs, { resume: resume.keys }) }
      : {}),
  };
  if (resume.detach && exec.batch) exec.detach = true;
  if (plan.toRescore.length > 0) {
    const rerun = new Set(resume.changedScorers);
    const units = Array.isArray(plan.toRescore)
      ? await rescoreUnits(store, run.id, plan.toRescore, plan.samples, rerun)
      : pagedRescoreUnits(store, run, resume.keys!, rerun);
    exec.rescore = { units, pass: `resume-${owner.token.slice(0, 12)}` };
  }
  return ev.callModel ? { ...exec, callModel: ev.callModel } : exec;
}

/**
 * Claims and executes a planned resume: only the keys without an outcome run.
 *
 * @example const report = await executeResume(planning.resume, { store, onEvent });
 */
export async function executeResume(
  resume: PlannedResume,
  options: ExecuteOptions,
): Promise<RunReport> {
  return runExecution(await claimResume(resume, options), options);
}

/**
 * The ending of a resume with nothing to execute. A run whose status already says so is reported
 * without being claimed; one whose status lags its attempts (every key scored, but interrupted,
 * or running under a dead owner) is claimed and released, which settles it by the status rule.
 *
 * @example if (refusal.reason === "nothing-to-resume") await settleResume(refusal.resume, options);
 */
export async function settleResume(
  resume: PlannedResume,
  options: ExecuteOptions,
): Promise<RunReport> {
  const { run, plan } = resume;
  const settled = settledStatus({ remaining: plan.erroredKept, cutShort: false });
  if (run.status !== settled) return executeResume(resume, options);
  const t0 = performance.now();
  const report = await settledReport(run, plan, options.store);
  report.wallMs = performance.now() - t0;
  const { id: runId, evalName } = run;
  options.onEvent?.({ type: "run-started", runId, evalName, resumed: true, plan: report.plan });
  options.onEvent?.({ type: "run-finished", report });
  return report;
}

/**
 * Continues a run under its id and recorded configuration, executing only the keys without a
 * scored attempt; a run with nothing left is settled and reported. Throws the refusal's error
 * otherwise: `E_RUN_NOT_FOUND`, `E_RUN_ACTIVE` while a live owner executes the run, and
 * `E_CHANGED_SAMPLES` when samples changed, unless `rerunChanged`.
 *
 * @example await resumeRun({ store, runId: "r_abc", eval: resolved });
 */
export async function resumeRun(options: ResumeOptions): Promise<RunReport> {
  const planning = await planResume(options);
  if (planning.ok) return executeResume(planning.resume, options);
  const { refusal } = planning;
  if (refusal.reason === "nothing-to-resume") return settleResume(refusal.resume, options);
  throw refusal.error;
}

/** What `findEvalSource` is asked for: the settled stamp, else pages (and the run's stamp). */
function stampOptions(
  options: ResumeOptions,
  settled: string | undefined,
  paged: { stamp?: string } | undefined,
): ResumeOptions & { datasetStamp?: string } {
  const { paged: pages, ...rest } = options;
  if (settled !== undefined) return { ...rest, datasetStamp: settled };
  if (paged === undefined || !pages) return rest;
  return {
    ...rest,
    paged: pages,
    ...(paged.stamp === undefined ? {} : { datasetStamp: paged.stamp }),
  };
}

function refuse(refusal: ResumeRefusal): ResumePlanning {
  return { ok: false, refusal };
}
