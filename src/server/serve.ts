import type { RunReport } from "../core/events.js";
import { DEFAULT_STALE_MS } from "../runs/stale-limit.js";
import { recoverOrphans } from "../runs/recover-orphans.js";
import type { EvalRegistry } from "../runs/eval-registry.js";
import type { Store } from "../store/types.js";
import { allowedHostsFor, parseAllowedHost, type AllowedHosts } from "./allowed-hosts.js";
import { assertBindable, MIN_TOKEN_LENGTH } from "./bind-policy.js";
import { createApp } from "./create-app.js";
import { ExecutionRegistry } from "./executions.js";
import { listen, type ConnectionLimits } from "./listen.js";
import { createRedactor } from "./redact.js";
import { StreamSlots } from "./stream-slots.js";

export interface ServeOptions {
  store: Store;
  host: string;
  /** 0 picks a free port. */
  port: number;
  evals?: EvalRegistry;
  /**
   * Required (at least 32 characters) to bind anything but loopback: every /api request then
   * needs it as a bearer token.
   */
  token?: string;
  /** More `Host` names to answer to (`name` for any port, `name:port`), e.g. a proxy's. */
  allowedHosts?: readonly string[];
  /** Largest request body in bytes (default 1 MiB). */
  maxBodyBytes?: number;
  /** Event streams open at once (default 100); past it, 503 `too_many_streams`. */
  maxStreams?: number;
  limits?: Partial<ConnectionLimits>;
  /** Values never to send or log (API keys from the environment, see secretsFromEnv). */
  secrets?: readonly string[];
  /** Where recoveries and server-side failures are described; secrets are stripped first. */
  log?: (line: string) => void;
  staleMs?: number;
  /** Who a review that names no reviewer is by (`STET_REVIEWER`). */
  reviewer?: string;
}

export interface Serving {
  /** Base URL, e.g. http://127.0.0.1:7477 (the real port when 0 was asked for). */
  url: string;
  /** The runs this server executes right now. */
  executing(): number;
  /** The event streams open right now (follows, starts and resumes). */
  openStreams(): number;
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
 * Throws E_CONFIG for options `serve` would refuse (a bind beyond loopback without a long enough
 * token, an allowed host that is no host name), so a shell can refuse them before it opens a
 * store.
 *
 * @example checkServeOptions({ host: "0.0.0.0", token: "abc" }) // throws: 32 characters needed
 */
export function checkServeOptions(
  options: Pick<ServeOptions, "host" | "token" | "allowedHosts">,
): void {
  assertBindable(options.host, options.token);
  options.allowedHosts?.forEach(parseAllowedHost);
}

/**
 * The HTTP API and web UI over a store, bound and running: recovers orphaned runs (a dead
 * owner's run becomes interrupted) before it listens, and again every stale period, and owns the
 * runs it starts or resumes until `shutdown`. It answers only to the Host names it is bound to
 * (allowedHostsFor) and refuses to bind beyond loopback without a long enough token.
 *
 * @example
 * const server = await serve({ store, host: "127.0.0.1", port: 7477, evals });
 * process.on("SIGTERM", () => void server.shutdown());
 */
export async function serve(options: ServeOptions): Promise<Serving> {
  const { store, token } = options;
  checkServeOptions(options);
  const redact = createRedactor([...(options.secrets ?? []), ...(token ? [token] : [])]);
  const log = (line: string) => options.log?.(redact(line));
  if (token && token.length < MIN_TOKEN_LENGTH) {
    log(
      `warning: STET_TOKEN is ${token.length} characters long; it is accepted on loopback, but binding beyond it needs ${MIN_TOKEN_LENGTH}`,
    );
  }
  const stale = options.staleMs === undefined ? {} : { staleMs: options.staleMs };
  const sweep = async () => {
    for (const { runId, reason } of (await recoverOrphans(store, stale)).recovered) {
      log(`recovered run ${runId}: its owner died (${reason}); it is interrupted and resumable`);
    }
  };
  await sweep();

  const executions = new ExecutionRegistry();
  const streams = new StreamSlots(options.maxStreams);
  // The names need the port, known once it listens; until then no Host is admitted.
  let hosts: AllowedHosts | undefined = [];
  const app = createApp({
    store,
    executions,
    streams,
    allowedHosts: () => hosts,
    ...(options.maxBodyBytes === undefined ? {} : { maxBodyBytes: options.maxBodyBytes }),
    ...stale,
    ...(options.evals ? { evals: options.evals } : {}),
    ...(options.token ? { token: options.token } : {}),
    ...(options.secrets ? { secrets: options.secrets } : {}),
    ...(options.log ? { log: options.log } : {}),
    ...(options.reviewer ? { reviewer: options.reviewer } : {}),
  });
  const server = await listen(app, {
    host: options.host,
    port: options.port,
    ...(options.limits ? { limits: options.limits } : {}),
  });
  hosts = allowedHostsFor(options.host, server.port, options.allowedHosts);
  const timer = setInterval(
    () => void sweep().catch((e: unknown) => log(`orphan sweep failed: ${String(e)}`)),
    options.staleMs ?? DEFAULT_STALE_MS,
  );
  timer.unref();
  return {
    url: server.url,
    executing: () => executions.list().length,
    openStreams: () => streams.open,
    shutdown: async () => {
      const reports = await executions.stopAll();
      clearInterval(timer);
      await server.close();
      return reports;
    },
    abort: () => executions.abortAll(),
  };
}
