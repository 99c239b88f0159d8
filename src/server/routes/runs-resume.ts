import { Hono } from "hono";
import * as z from "zod";
import { isStetError, StetError } from "../../core/errors.js";
import { assertClaimable } from "../../engine/acquire.js";
import { executeRun } from "../../engine/execute-run.js";
import {
  claimResume,
  planResume,
  type PlannedResume,
  type ResumeOptions,
} from "../../engine/run-eval.js";
import { ApiError } from "../api-error.js";
import type { AppDeps } from "../app-deps.js";
import { evalForRun } from "../eval-for-run.js";
import { streamExecution } from "../stream-execution.js";
import { parseBody } from "../validate.js";

const resumeBody = z
  .object({
    /** Re-run samples whose content changed since the run started, with the new content. */
    rerunChanged: z.boolean().optional(),
  })
  .strict();

/**
 * POST /runs/:id/resume. Every refusal is decided before the stream opens, so it is an ordinary
 * JSON answer: 404 `run_not_found`, 409 `run_active` (a live owner, or another resumer won the
 * claim), 400 `nothing_to_resume`, 409 `changed_samples`. Then the stream: `started` first, with
 * `preserved` and `remaining`, and exactly the remaining keys executing.
 *
 * @example app.route("/api", runsResumeRoutes(deps));
 */
export function runsResumeRoutes(deps: AppDeps): Hono {
  const app = new Hono();

  app.post("/runs/:id/resume", async (c) => {
    const runId = c.req.param("id");
    const body = await parseBody(c, resumeBody);
    const run = await deps.store.getRun(runId);
    if (!run) throw new StetError("E_RUN_NOT_FOUND", `no run with id "${runId}"`);
    // Cheap refusal first; planResume checks again and the claim below decides for good.
    assertClaimable(run, deps.engine);

    const options: ResumeOptions = {
      store: deps.store,
      runId,
      eval: await evalForRun(deps.evals, run),
      ...(body.rerunChanged === undefined ? {} : { rerunChanged: body.rerunChanged }),
      ...deps.engine,
    };
    const planned = await planResume(options).catch((error: unknown) => {
      if (!isStetError(error, "E_CHANGED_SAMPLES")) throw error;
      const message = error.message.replace(/pass --rerun-changed/, 'send {"rerunChanged": true}');
      throw new ApiError(409, "changed_samples", message);
    });
    if (planned.plan.toExecute.length === 0) {
      await settleFinished(options, planned);
      throw new ApiError(
        400,
        "nothing_to_resume",
        `run ${runId} has nothing to resume: all ${planned.plan.total} keys have a scored attempt`,
      );
    }
    // The claim is the store's compare-and-set on the owner token planResume judged dead: of any
    // number of concurrent resumers, in this process or others, exactly one gets past this line;
    // the rest get E_RUN_ACTIVE (409) while no stream has been opened yet.
    const execution = await claimResume(options, planned);

    return streamExecution(c, deps, runId, (controls) =>
      executeRun(execution, { ...options, ...controls }),
    );
  });

  return app;
}

/**
 * A run whose every key is scored but whose status says otherwise (its owner died after the last
 * commit) is claimed and released as completed, so it stops offering a resume. Losing that claim
 * to someone else is fine: they settle it.
 */
async function settleFinished(options: ResumeOptions, planned: PlannedResume): Promise<void> {
  if (planned.run.status === "completed") return;
  try {
    await executeRun(await claimResume(options, planned), { store: options.store });
  } catch (error) {
    if (!isStetError(error, "E_RUN_ACTIVE")) throw error;
  }
}
