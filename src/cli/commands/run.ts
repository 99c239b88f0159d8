import { isStetError, StetError } from "../../core/errors.js";
import { checkRunId, prepareStart, runEval, startDistributed } from "../../runs/start-run.js";
import { leaseTime, workerStaleLimit } from "../../runs/work-run.js";
import { staleLimit } from "../../runs/stale-limit.js";
import type { Store } from "../../store/types.js";
import { createIo } from "../io.js";
import { openStore, storeLocation } from "../open-store.js";
import { prepareRunOutput, withRunOutput } from "../run-output.js";
import { runWithUi, uiOptions } from "../run-ui.js";
import { resumeCommand, resumeInStore } from "./resume.js";

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
  /** The run's id: the same command again resumes it, or does nothing once it is complete. */
  runId?: string;
  allowEvalChange?: boolean;
  /** Open the run to workers (`stet worker`) and work on it as one of them. */
  distributed?: boolean;
  /** How long loading the eval module may take, ms. */
  loadTimeout?: number;
}

/**
 * `stet run <eval>`: start a run (or, with `--resume <id>`, continue one). With `--run-id` naming
 * a run that exists, the run of the same eval is resumed (or left alone when complete); a run of
 * another eval is refused.
 */
export async function runCommand(target: string, flags: RunFlags): Promise<number> {
  if (flags.distributed && flags.resume) {
    throw new StetError(
      "E_USAGE",
      "--distributed starts a new run; resume one with `stet resume <id>`",
    );
  }
  if (flags.distributed && flags.output !== undefined) {
    throw new StetError(
      "E_USAGE",
      "--output streams one process's results; a distributed run's are in the store: `stet export <id>` once it is complete",
    );
  }
  if (flags.resume) return resumeCommand(flags.resume, { ...flags, eval: target });
  if (flags.runId !== undefined) checkRunId(flags.runId);
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
    ...(flags.runId === undefined ? {} : { runId: flags.runId }),
    ...(flags.loadTimeout === undefined ? {} : { loadTimeoutMs: flags.loadTimeout }),
  });
  await prepareRunOutput(flags.output, "--output");
  const store = await openStore(
    flags.store,
    flags.distributed ? workerStaleLimit(stale, leaseTime()) : stale,
  );
  try {
    const again = () => resumeNamed(store, prepared.runId, prepared.eval.name, target, flags);
    if (flags.runId !== undefined && (await store.getRun(flags.runId))) return await again();
    const start = flags.distributed ? startDistributed : runEval;
    try {
      return await withRunOutput(store, io, flags.output, (tee) =>
        runWithUi(io, uiOptions(flags, { model: prepared.model }), (controls) =>
          start({ ...prepared, store, ...stale, ...controls, onEvent: tee(controls.onEvent) }),
        ),
      );
    } catch (error) {
      // Another `stet run --run-id` created it meanwhile: the store's create is atomic, so exactly
      // one of them executes; this one goes the resume way (E_RUN_ACTIVE while that one lives).
      if (
        flags.runId !== undefined &&
        isStetError(error, "E_INVALID_INPUT") &&
        (await store.getRun(flags.runId))
      ) {
        return await again();
      }
      throw error;
    }
  } finally {
    await store.close();
  }
}

/** `stet run --run-id <id>` of a run that exists: the resume path, for a run of the same eval. */
async function resumeNamed(
  store: Store,
  runId: string,
  evalName: string,
  target: string,
  flags: RunFlags,
): Promise<number> {
  const run = (await store.getRun(runId))!;
  if (run.evalName !== evalName) {
    throw new StetError(
      "E_EVAL_CHANGED",
      `--run-id ${runId} names a run of eval "${run.evalName}", not of "${evalName}": ` +
        "choose another id for this eval",
      { details: { runId, evalName: run.evalName } },
    );
  }
  return resumeInStore(store, runId, { ...flags, eval: target });
}
