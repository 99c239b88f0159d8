import { prepareStart, runEval } from "../../runs/start-run.js";
import { staleLimit } from "../../runs/stale-limit.js";
import { createIo } from "../io.js";
import { openStore, storeLocation } from "../open-store.js";
import { prepareRunOutput, withRunOutput } from "../run-output.js";
import { runWithUi, uiOptions } from "../run-ui.js";
import { resumeCommand } from "./resume.js";

export interface RunFlags {
  model?: string;
  epochs?: number;
  concurrency?: number;
  limit?: number;
  timeout?: number;
  store?: string;
  json?: boolean;
  resume?: string;
  failUnder?: number;
  rerunChanged?: boolean;
  resumeFrom?: string;
  /** The spend cap on the run's total, USD. */
  maxCost?: number;
  /** Results JSONL streamed as samples finish; the ResultSet beside it at the end. */
  output?: string;
}

/** `stet run <eval>`: start a run (or, with `--resume <id>`, continue one). */
export async function runCommand(target: string, flags: RunFlags): Promise<number> {
  if (flags.resume) return resumeCommand(flags.resume, { ...flags, eval: target });
  const io = createIo(flags.json ?? false);
  const stale = staleLimit();
  storeLocation(flags.store); // a bad --store or STET_STORE refuses before the eval loads
  // Loaded and checked before the store opens: a bad eval, seed or --output refuses without a run.
  const prepared = await prepareStart({
    eval: target,
    model: flags.model,
    epochs: flags.epochs,
    concurrency: flags.concurrency,
    limit: flags.limit,
    timeoutMs: flags.timeout,
    maxCost: flags.maxCost,
    resumeFrom: flags.resumeFrom,
    output: flags.output,
  });
  await prepareRunOutput(flags.output, "--output");
  const store = await openStore(flags.store, stale);
  try {
    return await withRunOutput(store, io, flags.output, (tee) =>
      runWithUi(io, uiOptions(flags), (controls) =>
        runEval({ ...prepared, store, ...stale, ...controls, onEvent: tee(controls.onEvent) }),
      ),
    );
  } finally {
    await store.close();
  }
}
