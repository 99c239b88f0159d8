import { Hono } from "hono";
import type { EvalsView } from "../../api/contract.js";
import type { AppDeps } from "../app-deps.js";

/**
 * GET /evals: the evals this server can start, and the files it could not register.
 *
 * @example app.route("/api", evalsRoutes(deps));
 */
export function evalsRoutes(deps: AppDeps): Hono {
  const app = new Hono();
  app.get("/evals", (c) =>
    c.json(
      deps.redact({
        evals: deps.evals.list(),
        problems: deps.evals.problems,
      } satisfies EvalsView),
    ),
  );
  return app;
}
