import type { RunEvent } from "../core/events.js";

/** How long a run stopped by a fault may take to release itself before the process exits anyway. */
const RELEASE_GRACE_MS = 30_000;

/**
 * While a run executes: an exception nobody caught or a promise rejection nobody handled (a
 * solver's timer that throws, a library's stray rejection) would end the process on the spot
 * and leave its run `running`. Instead the first one is kept and `abort` aborts the execution at
 * once, with a note naming the error, so the engine releases the run `interrupted` before the
 * CLI exits 1. If the release has not happened within `RELEASE_GRACE_MS` the process exits
 * anyway (a same-host resume then finds the owner's pid gone). Returns the fault seen, if any,
 * and a function that removes the handlers.
 */
export function trapFaults(): {
  abort: AbortSignal;
  fault: () => { error: unknown } | undefined;
  release: () => void;
} {
  const abort = new AbortController();
  let fault: { error: unknown } | undefined;
  const handler = (error: unknown) => {
    if (fault) return;
    fault = { error };
    const message = error instanceof Error ? error.message : String(error);
    abort.abort(`stopped by an unexpected error in this process: ${message}`);
    setTimeout(() => {
      process.stderr.write(`stet: ${describeFault(error)}\n`);
      process.exit(1);
    }, RELEASE_GRACE_MS).unref();
  };
  process.on("uncaughtException", handler);
  process.on("unhandledRejection", handler);
  return {
    abort: abort.signal,
    fault: () => fault,
    release: () => {
      process.off("uncaughtException", handler);
      process.off("unhandledRejection", handler);
    },
  };
}

/** "unexpected error: <stack>", as the CLI prints any error it did not expect. */
export function describeFault(error: unknown): string {
  return `unexpected error: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`;
}

/**
 * The crash tests' kill switch: with `STET_FAULT_KILL_AT=batch-ended` in its environment, this
 * process kills itself with SIGKILL the moment a provider batch's results are downloaded and its
 * end recorded, before any of them is committed (a power cut between the download and the
 * commit). The tests set it on a child process; nothing else does.
 */
export function faultHook(env: NodeJS.ProcessEnv = process.env): (event: RunEvent) => void {
  if (env.STET_FAULT_KILL_AT !== "batch-ended") return () => {};
  return (event) => {
    if (event.type === "batch" && event.phase === "ended") process.kill(process.pid, "SIGKILL");
  };
}
