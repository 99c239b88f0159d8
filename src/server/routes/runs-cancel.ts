import { Hono } from "hono";
import { cancelRun } from "../../runs/cancel-run.js";
import type { AppDeps } from "../app-deps.js";

/**
 * POST /runs/:id/cancel. A run this server executes is stopped gracefully (202: in-flight
 * samples finish, then it is recorded as interrupted and resumable). A run whose owner elsewhere
 * is alive: 409 `run_active` (`stet cancel` asks it through the store). A run that is not
 * running: 409 `run_not_running`. A run marked running whose owner is dead is recovered on the
 * spot (200, interrupted). A distributed run's workers are asked through the store, wherever they
 * run (202 `requested`: each stops at its next heartbeat; the last to leave interrupts the run).
 * A run nobody executes that waits on provider batches (`stet run --detach`): they are cancelled
 * at the provider (200 `batches-cancelled`, with `batches`: cancelled, ended, left).
 *
 * @example app.route("/api", runsCancelRoutes(deps));
 */
export function runsCancelRoutes(deps: AppDeps): Hono {
  const app = new Hono();

  app.post("/runs/:id/cancel", async (c) => {
    const { runId, status, batches } = await cancelRun({
      store: deps.store,
      runId: c.req.param("id"),
      ...deps.engine,
      stopLocal: (id) => {
        const mine = deps.executions.get(id);
        mine?.stop();
        return mine !== undefined;
      },
      throughStore: false,
    });
    const code = status === "stopping" || status === "requested" ? 202 : 200;
    return c.json({ runId, status, ...(batches ? { batches } : {}) }, code);
  });

  return app;
}
