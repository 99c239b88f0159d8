import { StetError } from "../../core/errors.js";
import { renderPlan } from "../render/summary.js";
import { loadEvalSource } from "../../eval/load-eval-source.js";
import { resolveEval } from "../../eval/resolve-eval.js";
import { resumeRun } from "../../engine/run-eval.js";
import { createIo } from "../io.js";
import { openStore } from "../open-store.js";
import { withRunOutput } from "../run-output.js";
import { runWithUi } from "../run-ui.js";
import { staleLimit } from "../../engine/stale-limit.js";
import { uiOptions } from "./run.js";
import type { PlanSummary } from "../../core/events.js";

export interface ResumeFlags {
  store?: string;
  json?: boolean;
  eval?: string;
  rerunChanged?: boolean;
  rerunErrors?: boolean;
  failUnder?: number;
  /** Results JSONL to append to; by default the one the run was started with (if any). */
  output?: string;
}

/** `stet resume <run-id>`: print the plan, then execute only the keys without a scored attempt. */
export async function resumeCommand(runId: string, flags: ResumeFlags): Promise<number> {
  const io = createIo(flags.json ?? false);
  const stale = staleLimit();
  const store = await openStore(flags.store);
  try {
    const run = await store.getRun(runId);
    if (!run)
      throw new StetError("E_RUN_NOT_FOUND", `no run with id "${runId}" in ${store.location}`);
    const evalPath = flags.eval ?? run.config.evalPath;
    if (!evalPath) {
      throw new StetError(
        "E_USAGE",
        `run ${runId} was not started from an eval file; pass --eval <file>`,
      );
    }
    const loaded = await loadEvalSource(evalPath);
    // The run's recorded configuration applies; the eval contributes samples, solver, scorers.
    const ev = await resolveEval(loaded.eval, { baseDir: loaded.baseDir });
    const output = flags.output ?? run.config.output;
    return await withRunOutput(store, io, output, (tee) =>
      runWithUi(io, uiOptions(flags), (controls) =>
        resumeRun({
          store,
          runId,
          eval: ev,
          ...(flags.rerunChanged === undefined ? {} : { rerunChanged: flags.rerunChanged }),
          ...(flags.rerunErrors === undefined ? {} : { rerunErrors: flags.rerunErrors }),
          ...stale,
          ...controls,
          onEvent: tee(controls.onEvent),
        }),
      ),
    ).catch((error: unknown) => {
      if (error instanceof StetError && error.code === "E_CHANGED_SAMPLES") {
        const plan = error.details?.plan as PlanSummary | undefined;
        if (plan) io.say(renderPlan(plan));
      }
      throw error;
    });
  } finally {
    await store.close();
  }
}
