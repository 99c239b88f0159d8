import { relative } from "node:path";
import { isStetError } from "../core/errors.js";
import type { RunReport } from "../core/events.js";
import { evalFiles } from "../runs/eval-files.js";
import { prepareStart, runEval, type StartRequest } from "../runs/start-run.js";
import type { Store } from "../store/types.js";
import { EXIT } from "./exit-codes.js";
import type { Io } from "./io.js";
import { runWithUi, type UiOptions } from "./run-ui.js";
import { iterationChanges, renderChanges } from "./watch-changes.js";
import { readContents, waitForChange } from "./watch-files.js";

export interface WatchOptions {
  io: Io;
  ui: UiOptions;
  /** What every iteration starts: its `reuse` is the first's (the later ones reuse the previous). */
  request: StartRequest;
  store: Store;
  /** The store's stale limit and heartbeat, as `runEval` takes them. */
  stale: { staleMs?: number };
}

/**
 * `stet run <eval> --watch`: runs the eval, then again on every change of the eval file, its
 * local imports or its dataset file, each iteration a new run that reuses the previous
 * iteration's (`--reuse <run>`), so only changed keys execute; after each, what changed since
 * the last. An eval that fails to load is reported and watched until it is fixed. SIGINT or
 * SIGTERM stops: between iterations at once (exit 0), during one as any run stops (its run is
 * left interrupted and resumable, and its exit code is returned). Every iteration's run stays in
 * the store.
 */
export async function watchRuns(options: WatchOptions): Promise<number> {
  const { io } = options;
  const stop = new AbortController();
  const onSignal = () => stop.abort();
  process.on("SIGINT", onSignal);
  process.on("SIGTERM", onSignal);
  const source = options.request.eval;
  // What a failed load leaves to watch: the eval file and the imports its text names.
  const known = evalFiles(
    typeof source === "string" ? source : undefined,
    typeof source === "object" && "dataset" in source ? source.dataset.dataset : undefined,
  );
  let watched = known;
  let reuse = options.request.reuse;
  let previous: RunReport | undefined;
  try {
    for (;;) {
      watched = [...new Set([...watched, ...known])];
      let contents = readContents(watched);
      const loaded = await load({ ...options.request, fresh: true, ...reuseOf(reuse) }, io);
      if (stop.signal.aborted) return EXIT.ok;
      if (loaded) {
        watched = evalFiles(loaded.evalPath, loaded.datasetFile);
        contents = readContents(watched);
        let report: RunReport | undefined;
        const code = await runWithUi(io, options.ui, async (controls) => {
          report = await runEval({
            ...loaded,
            store: options.store,
            ...options.stale,
            ...controls,
          });
          return report;
        });
        if (stop.signal.aborted) return code;
        if (report && previous) {
          io.say(renderChanges(await iterationChanges(options.store, previous, report)).join("\n"));
        }
        if (report) [previous, reuse] = [report, report.runId];
      }
      io.say(`watching ${watched.length} files for changes (Ctrl-C to stop)…`);
      const changed = await waitForChange(contents, stop.signal);
      if (changed === null) return EXIT.ok;
      io.say(`changed: ${changed.map((file) => relative(process.cwd(), file)).join(", ")}`);
    }
  } finally {
    process.off("SIGINT", onSignal);
    process.off("SIGTERM", onSignal);
  }
}

/** The iteration's eval loaded and resolved, or undefined when that failed (said on stderr). */
async function load(request: StartRequest, io: Io) {
  try {
    return await prepareStart(request);
  } catch (error) {
    if (!isStetError(error)) throw error;
    io.stderr.write(`stet: ${error.message}\n`);
    return undefined;
  }
}

function reuseOf(reuse: string | undefined): { reuse?: string } {
  return reuse === undefined ? {} : { reuse };
}
