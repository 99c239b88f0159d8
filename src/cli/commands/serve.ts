import { createEvalRegistry, loadEvalRegistry, skippedLine } from "../../runs/eval-registry.js";
import { staleLimit } from "../../runs/stale-limit.js";
import { checkServeOptions, secretsFromEnv, serve } from "../../server/index.js";
import { EXIT } from "../exit-codes.js";
import { openStore } from "../open-store.js";
import { hintLine, resumeHint } from "../resume-hint.js";
import { trapSignals } from "../signals.js";

export interface ServeFlags {
  port: number;
  host?: string;
  store?: string;
  evals?: string;
  allowedHost?: string[];
  maxBody?: number;
  maxStreams?: number;
  /** How long loading each eval module of `--evals` may take, ms. */
  loadTimeout?: number;
}

/** `--allowed-host` values, then `STET_ALLOWED_HOSTS` (comma-separated). */
function allowedHosts(flags: ServeFlags): string[] {
  const fromEnv = (process.env.STET_ALLOWED_HOSTS ?? "")
    .split(",")
    .map((h) => h.trim())
    .filter((h) => h !== "");
  return [...(flags.allowedHost ?? []), ...fromEnv];
}

/**
 * `stet serve`: binds the API and web UI and prints where (see `serve`), and on SIGINT/SIGTERM
 * stops the runs it executes gracefully (they become interrupted, i.e. resumable) before it
 * returns; a second signal aborts them at once. Returns 130 when a signal interrupted runs, else 0.
 *
 * @example process.exitCode = await serveCommand({ port: 0, evals: "./evals" });
 */
export async function serveCommand(flags: ServeFlags): Promise<number> {
  const host = flags.host ?? "127.0.0.1";
  const token = process.env.STET_TOKEN || undefined;
  const secrets = secretsFromEnv(process.env);
  // No redaction of its own: the bin filters this process's output (guardOutput), the token and
  // every credential-like variable included, and serve() redacts what it logs.
  const log = (line: string) => void process.stderr.write(`${line}\n`);
  const hosts = allowedHosts(flags);
  checkServeOptions({ host, allowedHosts: hosts, ...(token ? { token } : {}) });

  // Before the store is opened: evals refused (two of one name) leave nothing behind.
  const loading = flags.loadTimeout === undefined ? {} : { timeoutMs: flags.loadTimeout };
  const evals = flags.evals ? await loadEvalRegistry(flags.evals, loading) : createEvalRegistry([]);
  const skipped = skippedLine(evals.skipped);
  if (skipped) log(`evals: ${skipped}`);
  for (const p of evals.problems) log(`evals: skipped ${p.file}: ${p.message}`);

  const stale = staleLimit();
  const store = await openStore(flags.store, stale);
  try {
    const server = await serve({
      store,
      host,
      port: flags.port,
      evals,
      secrets,
      log,
      allowedHosts: hosts,
      ...(flags.maxBody === undefined ? {} : { maxBodyBytes: flags.maxBody }),
      ...(flags.maxStreams === undefined ? {} : { maxStreams: flags.maxStreams }),
      ...stale,
      ...(token ? { token } : {}),
      ...(process.env.STET_REVIEWER ? { reviewer: process.env.STET_REVIEWER } : {}),
    });
    process.stdout.write(
      `stet serve listening on ${server.url} (store ${store.location}; ${evals.list().length} eval(s))\n` +
        `web UI: ${server.url}/\n`,
    );
    const signals = trapSignals((signal) => {
      const n = server.executing();
      log(
        `${signal}: stopping; ${n} run(s) finish their in-flight samples (signal again to abort)`,
      );
    });
    try {
      await new Promise((resolve) =>
        signals.stop.addEventListener("abort", resolve, { once: true }),
      );
      signals.abort.addEventListener("abort", () => server.abort(), { once: true });
      const reports = await server.shutdown();
      const interrupted = reports.filter((r) => r?.status === "interrupted");
      for (const r of interrupted)
        log(
          `run ${r!.runId} interrupted; resume it with: ${hintLine(resumeHint(r!.runId, flags.store))}`,
        );
      return interrupted.length > 0 ? EXIT.interrupted : EXIT.ok;
    } finally {
      signals.release();
    }
  } finally {
    await store.close();
  }
}
