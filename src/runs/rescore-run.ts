import { randomBytes } from "node:crypto";
import { StetError } from "../core/errors.js";
import type { Scorer } from "../core/eval.js";
import type { RunReport } from "../core/events.js";
import { settledPlan, type ExecutionPlan } from "../core/plan.js";
import type { IdentityDifference, Key, PendingRescore, Run, RunConfig } from "../core/types.js";
import { acquireRun, takenOver, takeoverRefusal } from "../engine/acquire.js";
import type { ExecuteOptions, Execution } from "../engine/execute-run.js";
import type { RescoreUnit } from "../engine/execute-scoring.js";
import { newOwnerIdentity } from "../engine/owner.js";
import { outcomePages, type OutcomePage } from "../evalport/outcome-pages.js";
import type { AttemptHead, Store } from "../store/types.js";
import { findEvalSource, type EvalLookup } from "./find-eval.js";
import { unknownRun } from "./require-run.js";
import type { ResumeEval } from "./resume-run.js";
import { rescoreReport } from "./rescore-report.js";
import { runExecution } from "./run-execution.js";
import { checkEval, withIdentity } from "./run-identity.js";
import { runSecrets } from "./run-secrets.js";

export interface RescoreOptions extends ExecuteOptions {
  runId: string;
  /**
   * The eval whose scorers score the run's stored outputs (its solver is never called). Default:
   * the one `findEval` finds for the run (`evalFile`, then `registry`, then the run's own file).
   */
  eval?: ResumeEval;
  evalFile?: string;
  registry?: EvalLookup;
  onlyRegistered?: boolean;
  /**
   * Go on although the eval's solver differs from the run's identity: the rescore records the
   * new identity, with the differences, in the run's history. Another eval's name is refused.
   */
  allowEvalChange?: boolean;
  /** How long loading the eval module may take (`--load-timeout`). */
  loadTimeoutMs?: number;
  /** Run only these of the eval's scorers (the others keep their scores); default all of them. */
  scorers?: readonly string[];
  /** Score only the keys whose outcome is a scorer error. */
  onlyErrors?: boolean;
}

/** A rescore planned against the run as it was read, before claiming it. */
export interface PlannedRescore {
  run: Run;
  /** How many stored attempts the rescore scores (one per key: each key's outcome), as planned. */
  count: number;
  /**
   * The stored attempts to score, read again from the store a page at a time as the execution
   * takes them (their outputs are never all held at once); the same ones the plan counted.
   */
  units: () => AsyncIterable<RescoreUnit>;
  /** The scorers whose scores count from now on, in the eval's order. */
  scorers: Scorer[];
  /** The rescore as the run records it until it is done (a new one, or the one it goes on with). */
  pending: PendingRescore;
  /** True when this goes on with an unfinished rescore of the same request. */
  continued: boolean;
  /**
   * The run's configuration as the claim records it: its scorers from now on (its metrics are
   * over them), their identity, the pending rescore and, when anything changed, a history entry.
   */
  config: RunConfig;
  /**
   * How the identity the run records changes (its scorers, and what else was accepted): empty
   * when the scorers stay the run's. A resume then takes an eval with the new scorers only.
   */
  changes: IdentityDifference[];
  ev: ResumeEval;
}

export type RescorePlanning =
  | { ok: true; rescore: PlannedRescore }
  | { ok: false; refusal: { reason: RescoreRefusal; error: StetError } };

/** Why a rescore will not run: `eval-changed` is another eval, or another solver (`checkEval`). */
export type RescoreRefusal = "run-not-found" | "run-active" | "usage" | "eval-changed";

/**
 * The first half of a rescore: reads the run and its eval and picks what to score, with no side
 * effects. Every key's outcome attempt whose solver succeeded is scored again (only scorer errors
 * with `onlyErrors`), by all of the eval's scorers or the named ones; an unfinished rescore with
 * the same request is continued where it stopped. Refusals: an unknown run, a live owner, a
 * scorer name the eval does not have, an eval that is not the run's (`checkEval`: another name,
 * or another solver without `allowEvalChange`).
 *
 * @example const planning = await planRescore({ store, runId: "r_abc", scorers: ["judge"] });
 */
export async function planRescore(options: RescoreOptions): Promise<RescorePlanning> {
  const { store, runId } = options;
  const run = await store.runs.get(runId);
  if (!run) return refuse("run-not-found", unknownRun(store, runId));
  const active = await takeoverRefusal(store, run, options);
  if (active) return refuse("run-active", active);
  // The run's snapshot is what is scored: the eval's dataset is not read. Only the eval and its
  // file are kept.
  const { eval: ev, path: evalPath }: { eval: ResumeEval; path: string | undefined } = options.eval
    ? { eval: options.eval, path: undefined }
    : await findEvalSource(run, { ...options, withoutSamples: true });

  const evalNames = ev.scorers.map((s) => s.name);
  const unknown = (options.scorers ?? []).filter((name) => !evalNames.includes(name));
  if (unknown.length > 0) {
    const message = `the eval has no scorer named ${unknown.map((n) => `"${n}"`).join(", ")} (it has: ${evalNames.join(", ") || "none"})`;
    return refuse("usage", new StetError("E_USAGE", message));
  }
  const named = options.scorers === undefined ? undefined : new Set(options.scorers);
  // Without --scorer the eval's scorers are the run's from now on; with it, the run's scorers
  // that the eval still has, and the named ones.
  const scorers = named
    ? ev.scorers.filter((s) => named.has(s.name) || run.config.scorers.includes(s.name))
    : [...ev.scorers];
  const request = {
    scorers: named ? [...named].sort() : evalNames,
    onlyErrors: options.onlyErrors ?? false,
  };
  const check = checkEval({
    run,
    // The identity the run records from now on: its scorers are the ones this rescore keeps.
    eval: { ...ev, scorers },
    evalPath,
    use: "rescore",
    scoredAny: (await store.reads.countKeys(runId)).scored > 0,
    allowEvalChange: options.allowEvalChange,
    secrets: runSecrets(store, options.secrets),
    evalFile: options.evalFile,
  });
  if (!check.ok) return refuse("eval-changed", check.error);
  const previous = run.config.rescore;
  const continued =
    previous !== undefined &&
    previous.onlyErrors === request.onlyErrors &&
    previous.scorers.join("\u0000") === request.scorers.join("\u0000");
  const pending: PendingRescore = continued
    ? previous
    : { pass: newPassId(), ...request, startedAt: new Date().toISOString() };

  const pick = unitPicker(store, run, pending, continued, named);
  const count = await pick.count();
  const changes = check.differences.map(({ field, recorded, current }) => ({
    field,
    recorded,
    current,
  }));
  const config = {
    ...withIdentity(run.config, check.identity, changes, "rescored"),
    rescore: pending,
  };
  return {
    ok: true,
    rescore: {
      run,
      count,
      units: () => pick.units(),
      scorers,
      pending,
      continued,
      config,
      changes,
      ev,
    },
  };
}

/**
 * Claims a planned rescore (dead owners are taken over, a live one refuses with `E_RUN_ACTIVE`)
 * and records it in the run, so a killed rescore is continued by the same command; returns what
 * `runExecution` executes.
 */
export async function claimRescore(
  planned: PlannedRescore,
  options: ExecuteOptions,
): Promise<Execution> {
  const { store } = options;
  const { run } = planned;
  const owner = newOwnerIdentity();
  await acquireRun(store, run, owner, options);
  if (!(await store.runs.updateConfig(run.id, owner.token, planned.config))) {
    throw await takenOver(store, run.id);
  }
  const claimed = (await store.runs.get(run.id)) ?? run;
  const exec: Execution = {
    run: claimed,
    owner,
    plan: rescorePlan(planned),
    resumed: false,
    solver: planned.ev.solver,
    scorers: planned.scorers,
    rescore: {
      units: planned.units(),
      pass: planned.pending.pass,
      journalKeep: planned.ev.journalKeep,
    },
  };
  if (planned.ev.callModel) exec.callModel = planned.ev.callModel;
  return exec;
}

/**
 * Scores a run's stored outputs again with the eval's scorers (or the named ones): no solver
 * call, and the attempts (outputs, usage, timestamps) stay as they are; each scoring adds a row.
 * Judge calls are the scoring's spend. Stopped early (Ctrl-C, a cancel, a kill), the same
 * command goes on with the attempts not yet scored. Throws the planning's refusal.
 *
 * @example const report = await rescoreRun({ store, runId: "r_abc", eval: ev });
 */
export async function rescoreRun(options: RescoreOptions): Promise<RunReport> {
  const planning = await planRescore(options);
  if (!planning.ok) throw planning.refusal.error;
  return executeRescore(planning.rescore, options);
}

/** Claims and executes a planned rescore (`claimRescore`, then `runRescore`). */
export async function executeRescore(
  planned: PlannedRescore,
  options: ExecuteOptions,
): Promise<RunReport> {
  return runRescore(await claimRescore(planned, options), options);
}

/**
 * Executes a claimed rescore and lets the run go (see `runExecution`); once every planned
 * output is scored, the run's pending-rescore mark is cleared before it is released.
 */
export function runRescore(exec: Execution, options: ExecuteOptions): Promise<RunReport> {
  return runExecution(exec, {
    ...options,
    report: (run, end) => rescoreReport(options.store, run, exec, end),
    beforeRelease: async (end) => {
      if (end.stopped !== null) return;
      const { rescore: _done, ...config } = exec.run.config;
      await options.store.runs.updateConfig(exec.run.id, exec.owner.token, config);
    },
  });
}

/**
 * Which outcomes a rescore scores, and those outcomes as units: each key's outcome (for its
 * snapshot fingerprint) that has an output to score, scored ones and scorer errors (only those
 * with `onlyErrors`), less those this rescore already scored when it is continued (its pass's
 * scorings, read for each page's range of sample ids). Both read the run a page of samples at a
 * time (`outcomePages`): `count()` from the attempts' heads, what the plan says; `units()` with
 * the outputs and the samples, as the pool takes them. Nothing of the run is held beyond a page.
 */
function unitPicker(
  store: Store,
  run: Run,
  pending: PendingRescore,
  continued: boolean,
  named: ReadonlySet<string> | undefined,
) {
  // With --only-errors only what is missing runs, unless scorers were named; else every scorer
  // of the request runs again.
  const rerun = new Set(named ?? (pending.onlyErrors ? [] : pending.scorers));
  async function* picked<A extends AttemptHead>(pages: AsyncIterable<OutcomePage<A>>) {
    for await (const page of pages) {
      const done = await scoredInPass(page.samples);
      for (const { sample, outcomes } of page.samples) {
        for (const outcome of outcomes) {
          const scorerError = outcome.status === "error" && outcome.error?.type === "scorer";
          if (outcome.status !== "scored" && !scorerError) continue;
          if (pending.onlyErrors && !scorerError) continue;
          if (done.has(attemptString(outcome))) continue;
          yield { outcome, sample };
        }
      }
    }
  }
  // A continued rescore skips what its pass scored before it stopped (a kill's last commit
  // included): the page's scorings of that pass, read as the page is.
  async function scoredInPass(samples: readonly { sample: { id: string } }[]) {
    const done = new Set<string>();
    if (!continued || samples.length === 0) return done;
    const range = { fromSampleId: samples[0]!.sample.id, toSampleId: samples.at(-1)!.sample.id };
    for (const s of await store.reads.listScorings(run.id, { ...range, pass: pending.pass })) {
      done.add(attemptString(s));
    }
    return done;
  }
  async function count(): Promise<number> {
    let n = 0;
    for await (const _ of picked(outcomePages(store, run.id, "heads"))) n++;
    return n;
  }
  async function* units(): AsyncIterable<RescoreUnit> {
    const pages = outcomePages(store, run.id, "whole", { samples: "whole" });
    for await (const { outcome, sample } of picked(pages)) {
      yield {
        key: { sampleId: outcome.sampleId, epoch: outcome.epoch },
        attempt: outcome.attempt,
        record: sample.record!,
        output: outcome.output,
        current: outcome.scores,
        rerun,
        usage: outcome.usage,
        failed: outcome.status === "error",
      };
    }
  }
  return { count, units };
}

function attemptString(a: Key & { attempt: number }): string {
  return `${a.sampleId}\u0000${a.epoch}\u0000${a.attempt}`;
}

/**
 * The plan of a rescore: its units are its keys, none executes. They are counted, not listed
 * (read from the store as they are scored), and it holds no sample: each unit brings its own.
 */
function rescorePlan(planned: PlannedRescore): ExecutionPlan {
  const { count } = planned;
  return { ...settledPlan(count), preserved: 0, toRescore: { length: count } };
}

function refuse(reason: RescoreRefusal, error: StetError) {
  return { ok: false as const, refusal: { reason, error } };
}

/** The id of a rescore: the mark of the scorings it makes. */
function newPassId(): string {
  return `rescore-${randomBytes(6).toString("hex")}`;
}
