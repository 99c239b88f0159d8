import { Hono } from "hono";
import * as z from "zod";
import { claimRescore, planRescore, runRescore } from "../../runs/rescore-run.js";
import type { AppDeps } from "../app-deps.js";
import { evalChangedApiError } from "../eval-changed.js";
import { streamExecution } from "../stream-execution.js";
import { parseBody } from "../validate.js";

const rescoreBody = z
  .object({
    /** Run only these of the eval's scorers; the others keep their scores. */
    scorers: z.array(z.string().min(1)).min(1).optional(),
    /** Score only the keys whose outcome is a scorer error. */
    onlyErrors: z.boolean().optional(),
    /** Go on although the eval's solver differs from the run's identity; recorded in its history. */
    allowEvalChange: z.boolean().optional(),
  })
  .strict();

/**
 * POST /runs/:id/rescore: scores the run's stored outputs again with its registered eval's
 * scorers; no solver is called and no attempt changes. The refusals are those of a resume,
 * decided before the stream opens: 404 `run_not_found`, 409 `run_active`, 403
 * `eval_not_allowed`, 404 `eval_not_found`, 409 `eval_changed` (the registered eval's solver
 * differs from the run's identity: send `allowEvalChange`), and 400 `usage` for a scorer the
 * eval does not have. Then the SSE stream: `started`, a `scoring` and a `progress` per scored output, and
 * `completed {report}` (whose `rescored` counts them).
 *
 * @example app.route("/api", runsRescoreRoutes(deps));
 */
export function runsRescoreRoutes(deps: AppDeps): Hono {
  const app = new Hono();

  app.post("/runs/:id/rescore", async (c) => {
    const runId = c.req.param("id");
    const body = await parseBody(c, rescoreBody);
    const options = { store: deps.store, ...deps.engine };
    const planning = await planRescore({
      ...options,
      runId,
      registry: deps.evals,
      onlyRegistered: true,
      ...(body.scorers === undefined ? {} : { scorers: body.scorers }),
      ...(body.onlyErrors === undefined ? {} : { onlyErrors: body.onlyErrors }),
      ...(body.allowEvalChange === undefined ? {} : { allowEvalChange: body.allowEvalChange }),
    });
    if (!planning.ok) {
      const { reason, error } = planning.refusal;
      throw reason === "eval-changed" ? evalChangedApiError(error, runId) : error;
    }
    // As for a resume: the stream's slot first, then the claim (of concurrent claimants one wins).
    const release = deps.streams.take();
    const execution = await claimRescore(planning.rescore, options).catch((error: unknown) => {
      release();
      throw error;
    });
    return streamExecution(
      c,
      deps,
      runId,
      (controls) => runRescore(execution, { ...options, ...controls }),
      release,
    );
  });

  return app;
}
