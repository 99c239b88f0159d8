import { DEFAULT_PORT } from "./default-port.js";
import { trapSignals } from "../cli/signals.js";
import { openStore } from "../cli/open-store.js";
import { DEFAULT_STALE_MS } from "../engine/owner.js";
import { staleLimit } from "../engine/stale-limit.js";
import { recoverOrphans, type RecoveryResult } from "../engine/recover-orphans.js";
import { createApp } from "./create-app.js";
import { createEvalRegistry, loadEvalRegistry } from "./eval-registry.js";
import { ExecutionRegistry } from "./executions.js";
import { createRedactor, secretsFromEnv } from "./redact.js";
import { assertBindable, listen } from "./serve.js";

export interface ServeFlags {
  port?: number;
  host?: string;
  store?: string;
  evals?: string;
}

/**
 * `stet serve`: recovers orphaned runs, binds the API and prints its URL on stdout, sweeps for
 * orphans every stale period, and on SIGINT/SIGTERM stops the runs it executes gracefully (they
 * become interrupted, i.e. resumable) before it returns; a second signal aborts them at once.
 * Returns 130 when a signal interrupted runs, else 0.
 *
 * @example process.exitCode = await serveCommand({ port: 0, evals: "./evals" });
 */
export async function serveCommand(flags: ServeFlags): Promise<number> {
  const host = flags.host ?? "127.0.0.1";
  const token = process.env.STET_TOKEN || undefined;
  assertBindable(host, token);
  const secrets = secretsFromEnv(process.env);
  const redact = createRedactor(secrets);
  const log = (line: string) => void process.stderr.write(`${redact(line)}\n`);

  const store = await openStore(flags.store);
  try {
    const evals = flags.evals ? await loadEvalRegistry(flags.evals) : createEvalRegistry([]);
    for (const p of evals.problems) log(`evals: skipped ${p.file}: ${p.message}`);
    const stale = staleLimit();
    const sweep = async () => report(await recoverOrphans(store, stale), log);
    await sweep();

    const executions = new ExecutionRegistry();
    const app = createApp({
      store,
      evals,
      executions,
      secrets,
      log,
      ...stale,
      ...(token ? { token } : {}),
    });
    const server = await listen(app, { host, port: flags.port ?? DEFAULT_PORT });
    process.stdout.write(
      `stet serve listening on ${server.url} (store ${store.location}; ${evals.list().length} eval(s))\n` +
        `web UI: ${server.url}/\n`,
    );
    const timer = setInterval(
      () => void sweep().catch((e: unknown) => log(`orphan sweep failed: ${String(e)}`)),
      stale.staleMs ?? DEFAULT_STALE_MS,
    );
    timer.unref();

    const signals = trapSignals((signal) => {
      const n = executions.list().length;
      log(
        `${signal}: stopping; ${n} run(s) finish their in-flight samples (signal again to abort)`,
      );
    });
    try {
      await new Promise((resolve) =>
        signals.stop.addEventListener("abort", resolve, { once: true }),
      );
      signals.abort.addEventListener("abort", () => executions.abortAll(), { once: true });
      const reports = await executions.stopAll();
      clearInterval(timer);
      await server.close();
      const interrupted = reports.filter((r) => r?.status === "interrupted");
      for (const r of interrupted)
        log(`run ${r!.runId} interrupted; resume it with: stet resume ${r!.runId}`);
      return interrupted.length > 0 ? 130 : 0;
    } finally {
      signals.release();
    }
  } finally {
    await store.close();
  }
}

function report(result: RecoveryResult, log: (line: string) => void): void {
  for (const { runId, reason } of result.recovered) {
    log(`recovered run ${runId}: its owner died (${reason}); it is interrupted and resumable`);
  }
}
