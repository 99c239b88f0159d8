import type { Run } from "../core/types.js";
import type { EngineEval } from "../engine/run-eval.js";
import type { LoadedEvalFile } from "../eval/load-eval-file.js";
import { loadEvalSource } from "../eval/load-eval-source.js";
import { resolveEval } from "../eval/resolve-eval.js";
import { ApiError } from "./api-error.js";
import type { EvalRegistry } from "./eval-registry.js";

/**
 * The eval a resume of `run` executes with: the registered eval of the run's name, else the file
 * the run was started from. The resume executes it with the run's recorded configuration
 * (epochs, concurrency, retries, reducer, timeout), as `stet resume` does.
 *
 * @example const ev = await evalForRun(evals, run); await planResume({ store, runId, eval: ev });
 */
export async function evalForRun(evals: EvalRegistry, run: Run): Promise<EngineEval> {
  let loaded: LoadedEvalFile | undefined = evals.get(run.evalName);
  if (!loaded && run.config.evalPath) loaded = await loadEvalSource(run.config.evalPath);
  if (!loaded) {
    throw new ApiError(
      404,
      "eval_not_found",
      `run ${run.id}'s eval "${run.evalName}" is not registered on this server and the run names no eval file`,
    );
  }
  return resolveEval(loaded.eval, { baseDir: loaded.baseDir });
}
