import { Hono } from "hono";
import * as z from "zod";
import { boundedNumber } from "../../core/bounds.js";
import { sampleLimitsSchema } from "../../core/limits.js";
import { prepareStart, runEval } from "../../runs/start-run.js";
import { ApiError } from "../api-error.js";
import type { AppDeps } from "../app-deps.js";
import { streamExecution } from "../stream-execution.js";
import { maxCostSchema, parseBody } from "../validate.js";
import { resumeResponse } from "./runs-resume.js";

const startBody = z
  .object({
    eval: z.string().min(1),
    model: z.string().min(1).max(200).optional(),
    // Within the bounds the CLI and defineEval check too (`core/bounds.ts`).
    epochs: boundedNumber("epochs").optional(),
    limit: boundedNumber("limit").optional(),
    concurrency: boundedNumber("concurrency").optional(),
    /** The spend cap on the run's total, USD: at the cap the run stops, interrupted (reason budget). */
    maxCost: maxCostSchema.optional(),
    /** Per-sample limits, instead of the eval's (part of the run's identity). */
    limits: sampleLimitsSchema.optional(),
    /** The reply cache on or off, whatever the eval's `cache` says. */
    cache: z.boolean().optional(),
    /** The model calls through the provider's batch API (docs/batch.md), whatever the eval says. */
    batch: z.boolean().optional(),
    /** The run's id: the same request again resumes it, or answers 200 once it is complete. */
    runId: z.string().min(1).max(64).optional(),
    /** Reuse an earlier run's outcomes: a run id, or `latest` (see docs/reuse.md). */
    reuse: z.string().min(1).max(64).optional(),
    /** The run's labels, `{ "branch": "main" }` (checked as `--label` is). */
    labels: z.record(z.string(), z.string()).optional(),
    /** With `runId` of an existing run: go on although the eval changed. */
    allowEvalChange: z.boolean().optional(),
  })
  .strict();

/**
 * POST /runs: starts a run of a registered eval and streams it (see executionMessages). The run
 * belongs to the server, not to the request: a client that goes away only stops listening. With
 * `runId` naming a run that exists: a run of the same eval is resumed (as POST
 * /runs/:id/resume; a complete one is answered 200 `{ runId, status, complete: true }`), a run
 * of another eval is refused with 409 `eval_changed`.
 *
 * @example app.route("/api", runsStartRoutes(deps));
 */
export function runsStartRoutes(deps: AppDeps): Hono {
  const app = new Hono();

  app.post("/runs", async (c) => {
    const { eval: name, allowEvalChange, limits, ...overrides } = await parseBody(c, startBody);
    const registered = deps.evals.get(name);
    if (!registered) {
      throw new ApiError(404, "eval_not_found", `no eval named "${name}" is registered`);
    }
    // The body's limits are the eval's for this run: its identity, and a resume of it, has them.
    const loaded = limits ? { ...registered, eval: { ...registered.eval, limits } } : registered;
    // A run of this id exists: the resume way, with the eval asked for (its identity check
    // refuses a run of another eval), before the dataset is read for a new run.
    if (overrides.runId !== undefined && (await deps.store.runs.get(overrides.runId))) {
      const ask = {
        ...(overrides.model === undefined ? {} : { model: overrides.model }),
        ...(allowEvalChange === undefined ? {} : { allowEvalChange }),
        ...(overrides.maxCost === undefined ? {} : { maxCost: overrides.maxCost }),
        ...(overrides.cache === undefined ? {} : { cache: overrides.cache }),
        ...(overrides.batch === undefined ? {} : { batch: overrides.batch }),
      };
      return resumeResponse(c, deps, overrides.runId, ask, true, loaded);
    }
    // Loaded before answering, so a broken dataset is a JSON error rather than a stream event.
    const prepared = await prepareStart({ eval: loaded, ...overrides, paged: deps.engine.paged });
    // The stream's slot is taken before the run starts: at the cap, nothing starts.
    const release = deps.streams.take();
    return streamExecution(
      c,
      deps,
      prepared.runId,
      (controls) => runEval({ ...prepared, store: deps.store, ...deps.engine, ...controls }),
      release,
    );
  });

  return app;
}
