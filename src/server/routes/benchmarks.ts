import { Hono } from "hono";
import type { BenchmarksView } from "../../api/contract.js";
import { ApiError } from "../api-error.js";
import type { AppDeps } from "../app-deps.js";
import { benchmarkView } from "../benchmark-view.js";
import { pagingSchema, parseQuery } from "../validate.js";

/**
 * GET /benchmarks (one per eval with runs) and GET /benchmarks/:id (the eval's runs compared,
 * per run and per sample; `limit`/`offset` page the samples).
 *
 * @example app.route("/api", benchmarksRoutes(deps));
 */
export function benchmarksRoutes(deps: AppDeps): Hono {
  const app = new Hono();

  app.get("/benchmarks", async (c) => {
    const benchmarks = await deps.store.reads.listBenchmarks();
    const view: BenchmarksView = { benchmarks: benchmarks.map((b) => ({ id: b.evalName, ...b })) };
    return c.json(deps.redact(view));
  });

  app.get("/benchmarks/:id", async (c) => {
    const id = c.req.param("id");
    const page = parseQuery(c, pagingSchema);
    const view = await benchmarkView(deps.store, id, page, deps.engine.staleMs);
    if (!view) throw new ApiError(404, "benchmark_not_found", `no runs of an eval named "${id}"`);
    return c.json(deps.redact(view));
  });

  return app;
}
