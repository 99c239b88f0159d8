import type { Context } from "hono";
import { Hono } from "hono";
import * as z from "zod";
import { isStetError } from "../../core/errors.js";
import {
  claimResume,
  planResume,
  settleResume,
  type ResumeOptions,
} from "../../runs/resume-run.js";
import { runExecution } from "../../runs/run-execution.js";
import { requireLeases } from "../../store/types.js";
import { workRun } from "../../runs/work-run.js";
import { ApiError } from "../api-error.js";
import { evalChangedApiError } from "../eval-changed.js";
import type { AppDeps } from "../app-deps.js";
import { streamExecution } from "../stream-execution.js";
import { maxCostSchema, parseBody } from "../validate.js";
import { sampleLimitsSchema } from "../../core/limits.js";

const resumeBody = z
  .object({
    /** Re-run samples whose content changed since the run started, with the new content. */
    rerunChanged: z.boolean().optional(),
    /** This resume's spend cap on the run's total, USD, instead of the one it was started with. */
    maxCost: maxCostSchema.optional(),
    /** The reply cache on or off for this resume, whatever the eval's `cache` says. */
    cache: z.boolean().optional(),
    /** The model calls through the provider's batch API for this resume (docs/batch.md). */
    batch: z.boolean().optional(),
    /** Go on although the eval differs from the run's identity; recorded in its history. */
    allowEvalChange: z.boolean().optional(),
    /** Must be the run's model. */
    model: z.string().min(1).max(200).optional(),
    /** Sample ids whose keys execute again as new attempts. */
    rerun: z.array(z.string().min(1)).max(100_000).optional(),
    /** Execute again every key whose outcome scores below 1 on some scorer. */
    rerunFailed: z.boolean().optional(),
    /** Execute again every key whose outcome a per-sample limit ended. */
    rerunLimited: z.boolean().optional(),
    /**
     * The per-sample limits the run was started with, when its start body set them (default: the
     * run's own, when the registered eval has none).
     */
    limits: sampleLimitsSchema.optional(),
  })
  .strict();

/** What a resume request may ask for (the resume body, and a start body naming an existing run). */
export type ResumeAsk = Pick<
  ResumeOptions,
  | "rerunChanged"
  | "allowEvalChange"
  | "model"
  | "rerun"
  | "rerunFailed"
  | "rerunLimited"
  | "maxCost"
  | "cache"
  | "batch"
>;

/**
 * POST /runs/:id/resume. Every refusal is decided before the stream opens, so it is an ordinary
 * JSON answer: 404 `run_not_found`, 409 `run_active` (a live owner, or another resumer won the
 * claim), 400 `nothing_to_resume`, 409 `changed_samples`, 409 `eval_changed` (the registered
 * eval, or `model`, differs from the run's identity: send `allowEvalChange`), 400
 * `invalid_request` (`rerun` names unknown sample ids), 403 `eval_not_allowed` (the run was
 * started from a file outside `--evals`: the server imports nothing from there), 404
 * `eval_not_found`. Then the stream: `started` first, with
 * `preserved` and `remaining`, and exactly the remaining keys executing.
 *
 * @example app.route("/api", runsResumeRoutes(deps));
 */
export function runsResumeRoutes(deps: AppDeps): Hono {
  const app = new Hono();

  app.post("/runs/:id/resume", async (c) => {
    const { limits: asked, ...ask } = await parseBody(c, resumeBody);
    const runId = c.req.param("id");
    const run = await deps.store.runs.get(runId);
    const registered = run && deps.evals.get(run.evalName);
    // The run's registered eval with the body's limits, which the identity check compares. A
    // body without them resumes a run whose limits came from its start body (the registered eval
    // has none) with the run's own, as the web UI's resume does.
    const limits =
      asked ?? (registered?.eval.limits === undefined ? run?.config.limits : undefined);
    const loaded = limits && registered && { ...registered, eval: { ...registered.eval, limits } };
    return resumeResponse(c, deps, runId, ask, false, loaded);
  });

  return app;
}

/**
 * Plans, claims and streams a resume of `runId` (see the route). With `completeIsOk`, a run with
 * nothing left to execute is answered 200 `{ runId, status, complete: true }` instead of 400
 * `nothing_to_resume`: what an idempotent start (`runId` of a finished run) answers, with the
 * registered eval it named (`loaded`).
 */
export async function resumeResponse(
  c: Context,
  deps: AppDeps,
  runId: string,
  ask: ResumeAsk,
  completeIsOk = false,
  loaded?: ResumeOptions["loaded"],
): Promise<Response> {
  const options = { store: deps.store, ...deps.engine };
  // The registered eval of the run's name, or the one a start request named (`loaded`): either
  // is checked against the run's identity (`checkEval`), another eval's refused.
  const evals = { registry: deps.evals, onlyRegistered: true, ...(loaded ? { loaded } : {}) };
  const planning = await planResume({ ...options, runId, ...evals, ...definedOnly(ask) });
  if (!planning.ok && planning.refusal.reason === "distributed") {
    // A distributed run: this server joins it as one of its workers (reopening it if it was
    // interrupted), with the registered eval only; refused (400) before a stream opens when the
    // store cannot lease keys, or for what its workers cannot do.
    requireLeases(deps.store);
    refuseForDistributed(runId, ask);
    const release = deps.streams.take();
    return streamExecution(
      c,
      deps,
      runId,
      (controls) =>
        workRun({
          ...options,
          ...controls,
          runId,
          reopen: true,
          ...evals,
          ...(ask.cache === undefined ? {} : { cache: ask.cache }),
          ...(ask.maxCost === undefined ? {} : { maxCost: ask.maxCost }),
        }),
      release,
    );
  }
  if (!planning.ok) {
    const { refusal } = planning;
    if (refusal.reason === "changed-samples") {
      const message = refusal.error.message.replace(
        /pass --rerun-changed/,
        'send {"rerunChanged": true}',
      );
      throw new ApiError(409, "changed_samples", message);
    }
    if (refusal.reason === "eval-changed") throw evalChangedApiError(refusal.error, runId);
    // Every key is scored but the status may lag (its owner died after the last commit): settle
    // it, so it stops offering a resume. Losing that claim to someone else is fine: they settle.
    if (refusal.reason === "nothing-to-resume") {
      const report = await settleResume(refusal.resume, options).catch((error: unknown) => {
        if (!isStetError(error, "E_RUN_ACTIVE")) throw error;
        return undefined;
      });
      if (completeIsOk && report) {
        return c.json({ runId, status: report.status, complete: true }, 200);
      }
    }
    throw refusal.error;
  }
  // The claim is the store's compare-and-set on the owner token the plan judged dead: of any
  // number of concurrent resumers, in this process or others, exactly one gets past this line;
  // the rest get E_RUN_ACTIVE (409) while no stream has been opened yet.
  // The stream's slot is taken before the claim: at the cap, the run is left as it was.
  const release = deps.streams.take();
  const execution = await claimResume(planning.resume, options).catch((error: unknown) => {
    release();
    throw error;
  });
  return streamExecution(
    c,
    deps,
    runId,
    (controls) => runExecution(execution, { ...options, ...controls }),
    release,
  );
}

/**
 * What a distributed run's workers cannot do (they execute every key without a scored attempt,
 * with the run's eval): refused (400) as `stet resume` refuses its flags, never ignored.
 */
function refuseForDistributed(runId: string, ask: ResumeAsk): void {
  const unsupported = [
    ask.rerun !== undefined && "rerun",
    ask.rerunFailed === true && "rerunFailed",
    ask.rerunLimited === true && "rerunLimited",
    ask.rerunChanged === true && "rerunChanged",
    ask.allowEvalChange === true && "allowEvalChange",
  ].filter(Boolean);
  if (unsupported.length === 0) return;
  throw new ApiError(
    400,
    "invalid_request",
    `${unsupported.join(", ")} cannot be sent for run ${runId}, a distributed run: its workers execute every key without a scored attempt`,
  );
}

function definedOnly(ask: ResumeAsk): ResumeAsk {
  return Object.fromEntries(
    Object.entries(ask).filter(([, value]) => value !== undefined),
  ) as ResumeAsk;
}
