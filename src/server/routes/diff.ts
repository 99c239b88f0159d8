import { Hono } from "hono";
import * as z from "zod";
import type { RunDiffView } from "../../api/contract.js";
import { diffRuns } from "../../runs/diff-runs.js";
import type { AppDeps } from "../app-deps.js";
import { parseQuery } from "../validate.js";

const diffQuery = z.object({
  a: z.string().min(1),
  b: z.string().min(1),
  allowDifferentEvals: z.enum(["true", "false"]).optional(),
});

/**
 * GET /diff?a=<run>&b=<run>: the paired comparison of two runs (`stet diff --json`'s document);
 * 404 `run_not_found` for an unknown run, 400 `different_evals` for runs of two evals unless
 * `allowDifferentEvals=true`.
 *
 * @example app.route("/api", diffRoutes(deps));
 */
export function diffRoutes(deps: AppDeps): Hono {
  const app = new Hono();
  app.get("/diff", async (c) => {
    const q = parseQuery(c, diffQuery);
    const allowDifferentEvals = q.allowDifferentEvals === "true";
    const diff: RunDiffView = await diffRuns(deps.store, q.a, q.b, { allowDifferentEvals });
    return c.json(deps.redact(diff));
  });
  return app;
}
