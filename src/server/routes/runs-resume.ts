import { Hono } from "hono";
import * as z from "zod";
import { isStetError } from "../../core/errors.js";
import { claimResume, planResume, settleResume } from "../../runs/resume-run.js";
import { runExecution } from "../../runs/run-execution.js";
import { ApiError } from "../api-error.js";
import type { AppDeps } from "../app-deps.js";
import { streamExecution } from "../stream-execution.js";
import { maxCostSchema, parseBody } from "../validate.js";

const resumeBody = z
  .object({
    /** Re-run samples whose content changed since the run started, with the new content. */
    rerunChanged: z.boolean().optional(),
    /** This resume's spend cap on the run's total, USD, instead of the one it was started with. */
    maxCost: maxCostSchema.optional(),
  })
  .strict();

/**
 * POST /runs/:id/resume. Every refusal is decided before the stream opens, so it is an ordinary
 * JSON answer: 404 `run_not_found`, 409 `run_active` (a live owner, or another resumer won the
 * claim), 400 `nothing_to_resume`, 409 `changed_samples`, 403 `eval_not_allowed` (the run was
 * started from a file outside `--evals`: the server imports nothing from there), 404
 * `eval_not_found`. Then the stream: `started` first, with
 * `preserved` and `remaining`, and exactly the remaining keys executing.
 *
 * @example app.route("/api", runsResumeRoutes(deps));
 */
export function runsResumeRoutes(deps: AppDeps): Hono {
  const app = new Hono();

  app.post("/runs/:id/resume", async (c) => {
    const runId = c.req.param("id");
    const { rerunChanged, maxCost } = await parseBody(c, resumeBody);
    const options = { store: deps.store, ...deps.engine };
    const planning = await planResume({
      ...options,
      runId,
      registry: deps.evals,
      onlyRegistered: true,
      ...(rerunChanged === undefined ? {} : { rerunChanged }),
      ...(maxCost === undefined ? {} : { maxCost }),
    });
    if (!planning.ok) {
      const { refusal } = planning;
      if (refusal.reason === "changed-samples") {
        const message = refusal.error.message.replace(
          /pass --rerun-changed/,
          'send {"rerunChanged": true}',
        );
        throw new ApiError(409, "changed_samples", message);
      }
      // Every key is scored but the status may lag (its owner died after the last commit): settle
      // it, so it stops offering a resume. Losing that claim to someone else is fine: they settle.
      if (refusal.reason === "nothing-to-resume") {
        await settleResume(refusal.resume, options).catch((error: unknown) => {
          if (!isStetError(error, "E_RUN_ACTIVE")) throw error;
        });
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
  });

  return app;
}
