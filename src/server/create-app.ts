import { Hono } from "hono";
import { bodyLimit } from "hono/body-limit";
import type { Store } from "../store/types.js";
import { PAGED_DATASET_BYTES } from "../runs/start-run.js";
import { hostGuard, type AllowedHosts } from "./allowed-hosts.js";
import { ApiError, toApiError } from "./api-error.js";
import type { AppDeps } from "./app-deps.js";
import { bearerAuth } from "./bearer-auth.js";
import { crossSiteGuard } from "./cross-site.js";
import { securityHeaders } from "./security-headers.js";
import { StreamSlots } from "./stream-slots.js";
import { createEvalRegistry, type EvalRegistry } from "../runs/eval-registry.js";
import { ExecutionRegistry } from "./executions.js";
import { createRedactor } from "./redact.js";
import { benchmarksRoutes } from "./routes/benchmarks.js";
import { diffRoutes } from "./routes/diff.js";
import { evalsRoutes } from "./routes/evals.js";
import { runsCancelRoutes } from "./routes/runs-cancel.js";
import { runsEventsRoutes } from "./routes/runs-events.js";
import { runsReadRoutes } from "./routes/runs-read.js";
import { runsRescoreRoutes } from "./routes/runs-rescore.js";
import { runsReviewsRoutes } from "./routes/runs-reviews.js";
import { runsResumeRoutes } from "./routes/runs-resume.js";
import { runsStartRoutes } from "./routes/runs-start.js";
import { uiRoutes } from "./ui-routes.js";

export interface AppOptions {
  store: Store;
  /** The evals `POST /api/runs` may start, by name (default: none). */
  evals?: EvalRegistry;
  /** When set, every /api request needs `Authorization: Bearer <token>`. */
  token?: string;
  /** The runs this app executes; pass one to stop them on shutdown (see ExecutionRegistry). */
  executions?: ExecutionRegistry;
  /** Values never to send or log, e.g. API keys from the environment (see secretsFromEnv). */
  secrets?: readonly string[];
  /** Age after which another host's owner counts as dead (default 30 s). */
  staleMs?: number;
  heartbeatMs?: number;
  /** How long in-flight samples may finish after a cancel or shutdown (default 10 s). */
  graceMs?: number;
  /** Poll interval of store-backed event streams (default 500 ms). */
  pollMs?: number;
  /** Where server-side failures are described (internal errors keep their details here). */
  log?: (line: string) => void;
  /**
   * The `Host` names this app answers (see allowedHostsFor); others get 403. A function is asked
   * per request (a server bound to port 0 knows its port once it listens). Undefined, or a
   * function returning undefined: any Host (an in-process app, a wildcard bind).
   */
  allowedHosts?: AllowedHosts | (() => AllowedHosts | undefined);
  /** Largest request body in bytes (default 1 MiB); a larger one gets 413 unread. */
  maxBodyBytes?: number;
  /** The cap on open event streams (default: 100 at once, see StreamSlots). */
  streams?: StreamSlots;
  /** Who a review that names no reviewer is by (`STET_REVIEWER`); without it, such a review is refused. */
  reviewer?: string;
  /**
   * A registered eval's dataset file of at least this many bytes is never held whole: a run
   * started here is created and executed from its pages, and a resume of a run whose file still
   * has its stamp executes from the snapshot's (default `PAGED_DATASET_BYTES`, 8 MiB, as the CLI).
   */
  pagedDatasetBytes?: number;
}

/** `AppOptions.maxBodyBytes` by default. */
export const DEFAULT_MAX_BODY_BYTES = 1024 * 1024;

/**
 * The HTTP API over a store (`stet serve`), without listening: `serve.ts` binds it, tests call
 * `app.request(...)`. Errors are `{ error: { code, message } }` with a stable code; nothing sent
 * or logged carries a stack trace or a known secret. Every response carries the security headers;
 * a foreign Host is refused everywhere, and state-changing /api requests must come from no page
 * or this server's own, with a JSON body no larger than `maxBodyBytes`.
 *
 * @example
 * const app = createApp({ store, evals: await loadEvalRegistry("evals") });
 * const res = await app.request("/api/runs");
 */
export function createApp(options: AppOptions): Hono {
  const redact = createRedactor([
    ...(options.secrets ?? []),
    ...(options.token ? [options.token] : []),
  ]);
  const write = options.log ?? (() => {});
  const deps: AppDeps = {
    store: options.store,
    evals: options.evals ?? createEvalRegistry([]),
    executions: options.executions ?? new ExecutionRegistry(),
    streams: options.streams ?? new StreamSlots(),
    redact,
    engine: {
      ...(options.staleMs === undefined ? {} : { staleMs: options.staleMs }),
      ...(options.heartbeatMs === undefined ? {} : { heartbeatMs: options.heartbeatMs }),
      ...(options.graceMs === undefined ? {} : { graceMs: options.graceMs }),
      paged: { minBytes: options.pagedDatasetBytes ?? PAGED_DATASET_BYTES },
      secrets: [
        ...(options.secrets ?? []).map((value) => ({ name: "a server secret", value })),
        ...(options.token ? [{ name: "STET_TOKEN", value: options.token }] : []),
      ],
    },
    pollMs: options.pollMs ?? 500,
    log: (line) => write(redact(line)),
    ...(options.reviewer ? { reviewer: options.reviewer } : {}),
  };

  const app = new Hono();
  app.onError((error, c) => {
    const api = toApiError(error);
    if (api.code === "internal" || api.status >= 500) {
      deps.log(`${c.req.method} ${c.req.path}: ${describe(error)}`);
    }
    return c.json(redact({ error: { code: api.code, message: api.message } }), api.status);
  });
  app.notFound((c) => {
    const error = new ApiError(404, "not_found", `no route ${c.req.method} ${c.req.path}`);
    return c.json({ error: { code: error.code, message: error.message } }, 404);
  });
  // Outermost first: the headers go on every response, refusals below included.
  app.use("*", securityHeaders());
  app.use("*", hostGuard(hostsOf(options.allowedHosts)));
  app.use("/api/*", crossSiteGuard());
  if (options.token) app.use("/api/*", bearerAuth(options.token));
  app.use("/api/*", limitBody(options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES));

  for (const routes of [
    runsReadRoutes,
    runsStartRoutes,
    runsResumeRoutes,
    runsRescoreRoutes,
    runsCancelRoutes,
    runsEventsRoutes,
    runsReviewsRoutes,
    benchmarksRoutes,
    diffRoutes,
    evalsRoutes,
  ]) {
    app.route("/api", routes(deps));
  }
  app.route("/", uiRoutes());
  return app;
}

function hostsOf(allowed: AppOptions["allowedHosts"]): () => AllowedHosts | undefined {
  return typeof allowed === "function" ? allowed : () => allowed;
}

/**
 * hono's bodyLimit: a declared Content-Length over the limit is refused before a byte is read; a
 * chunked body is counted as it arrives and refused at the limit, so at most `max` bytes are ever
 * held. The connection is closed after the 413, so the rest of the body is not waited for.
 */
function limitBody(max: number) {
  return bodyLimit({
    maxSize: max,
    onError: (c) => {
      c.header("Connection", "close");
      throw new ApiError(413, "body_too_large", `request bodies are limited to ${max} bytes`);
    },
  });
}

function describe(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const cause = error.cause instanceof Error ? `\n  caused by: ${error.cause.stack}` : "";
  return `${error.stack ?? error.message}${cause}`;
}
