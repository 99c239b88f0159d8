import type { RunReport } from "../core/events.js";
import { DEFAULT_STALE_MS } from "../runs/stale-limit.js";
import { recoverOrphans } from "../runs/recover-orphans.js";
import type { EvalRegistry } from "../runs/eval-registry.js";
import type { Store } from "../store/types.js";
import { createApp } from "./create-app.js";
import { ExecutionRegistry } from "./executions.js";
import { assertBindable, listen } from "./listen.js";
import { createRedactor } from "./redact.js";

export interface ServeOptions {
  store: Store;
  host: string;
  /** 0 picks a free port. */
  port: number;
  evals?: EvalRegistry;
  /** Required to bind anything but loopback: every /api request then needs it as a bearer token. */
  token?: string;
  /** Values never to send or log (API keys from the environment, see secretsFromEnv). */
  secrets?: readonly string[];
  /** Where recoveries and server-side failures are described; secrets are stripped first. */
  log?: (line: string) => void;
  staleMs?: number;
}

export interface Serving {
  /** Base URL, e.g. http://127.0.0.1:7477 (the real port when 0 was asked for). */
  url: string;
  /** The runs this server executes right now. */
  executing(): number;
  /**
   * Stops gracefully: every run this server executes stops dispatching and finishes its in-flight
   * samples (becoming interrupted, i.e. resumable), then the listener closes. Resolves with the
   * runs' reports (undefined for one that failed).
   */
  shutdown(): Promise<(RunReport | undefined)[]>;
  /** Aborts the in-flight samples of every run at once (a second Ctrl-C during `shutdown`). */
  abort(): void;
}

/**
 * The HTTP API and web UI over a store, bound and running: recovers orphaned runs (a dead
 * owner's run becomes interrupted) before it listens, and again every stale period, and owns the
 * runs it starts or resumes until `shutdown`.
 *
 * @example
 * const server = await serve({ store, host: "127.0.0.1", port: 7477, evals });
 * process.on("SIGTERM", () => void server.shutdown());
 */
export async function serve(options: ServeOptions): Promise<Serving> {
  const { store } = options;
  assertBindable(options.host, options.token);
  const redact = createRedactor([
    ...(options.secrets ?? []),
    ...(options.token ? [options.token] : []),
  ]);
  const log = (line: string) => options.log?.(redact(line));
  const stale = options.staleMs === undefined ? {} : { staleMs: options.staleMs };
  const sweep = async () => {
    for (const { runId, reason } of (await recoverOrphans(store, stale)).recovered) {
      log(`recovered run ${runId}: its owner died (${reason}); it is interrupted and resumable`);
    }
  };
  await sweep();

  const executions = new ExecutionRegistry();
  const app = createApp({
    store,
    executions,
    ...stale,
    ...(options.evals ? { evals: options.evals } : {}),
    ...(options.token ? { token: options.token } : {}),
    ...(options.secrets ? { secrets: options.secrets } : {}),
    ...(options.log ? { log: options.log } : {}),
  });
  const server = await listen(app, { host: options.host, port: options.port });
  const timer = setInterval(
    () => void sweep().catch((e: unknown) => log(`orphan sweep failed: ${String(e)}`)),
    options.staleMs ?? DEFAULT_STALE_MS,
  );
  timer.unref();
  return {
    url: server.url,
    executing: () => executions.list().length,
    shutdown: async () => {
      const reports = await executions.stopAll();
      clearInterval(timer);
      await server.close();
      return reports;
    },
    abort: () => executions.abortAll(),
  };
}
