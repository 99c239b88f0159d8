import { Hono } from "hono";
import { StetError } from "../../core/errors.js";
import { ownerLiveness } from "../../engine/owner.js";
import { ApiError } from "../api-error.js";
import type { AppDeps } from "../app-deps.js";

/**
 * POST /runs/:id/cancel. A run this server executes is stopped gracefully (202: in-flight
 * samples finish, then it is recorded as interrupted and resumable). A run whose owner elsewhere
 * is alive: 409 `run_active`. A run that is not running: 409 `run_not_running`. A run marked
 * running whose owner is dead is recovered on the spot (200, interrupted).
 *
 * @example app.route("/api", runsCancelRoutes(deps));
 */
export function runsCancelRoutes(deps: AppDeps): Hono {
  const app = new Hono();

  app.post("/runs/:id/cancel", async (c) => {
    const runId = c.req.param("id");
    const run = await deps.store.getRun(runId);
    if (!run) throw new StetError("E_RUN_NOT_FOUND", `no run with id "${runId}"`);

    const mine = deps.executions.get(runId);
    if (mine) {
      mine.stop();
      return c.json({ runId, status: "stopping" }, 202);
    }
    if (run.status !== "running" || !run.owner) {
      throw new ApiError(
        409,
        "run_not_running",
        `run ${runId} is ${run.status}; nothing to cancel`,
      );
    }
    const liveness = ownerLiveness(run.owner, deps.engine);
    if (liveness.alive) {
      throw new ApiError(
        409,
        "run_active",
        `run ${runId} is executed by another process (${liveness.reason}); cancel it where it runs`,
      );
    }
    const note = `owner pid ${run.owner.pid} on ${run.owner.host} died (${liveness.reason}); interrupted by a cancel request`;
    if (!(await deps.store.interruptOrphan(runId, run.owner.token, note))) {
      throw new ApiError(409, "run_active", `run ${runId} was claimed by another process just now`);
    }
    return c.json({ runId, status: "interrupted" }, 200);
  });

  return app;
}
