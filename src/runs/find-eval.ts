import { StetError } from "../core/errors.js";
import type { EngineEval } from "../core/eval.js";
import type { Run } from "../core/types.js";
import type { LoadedEvalFile } from "../eval/load-eval-file.js";
import { resolveEval } from "../eval/resolve-eval.js";
import { loadEvalSource } from "./load-eval-source.js";

/** Evals known by name, such as a server's `--evals` directory (see `loadEvalRegistry`). */
export interface EvalLookup {
  get(name: string): LoadedEvalFile | undefined;
}

export interface FindEvalOptions {
  /** An eval file named by the user (`--eval`): it wins, e.g. when the run's file moved. */
  evalFile?: string;
  /** Registered evals: the one with the run's eval name comes next. */
  registry?: EvalLookup;
}

/**
 * The eval a resume of `run` executes: `evalFile` when given, else the registered eval of the
 * run's name, else the file the run was started from. Only its samples, solver and scorers
 * count; the run's recorded configuration (epochs, concurrency, retries, reducer, timeout,
 * model) applies. Throws `E_EVAL_NOT_FOUND` when none is known.
 *
 * @example const ev = await findEval(run, { evalFile: flags.eval });
 */
export async function findEval(run: Run, options: FindEvalOptions = {}): Promise<EngineEval> {
  const path = options.evalFile;
  let loaded: LoadedEvalFile | undefined =
    path === undefined ? undefined : await loadEvalSource(path);
  loaded ??= options.registry?.get(run.evalName);
  if (!loaded && run.config.evalPath) loaded = await loadEvalSource(run.config.evalPath);
  if (!loaded) {
    throw new StetError(
      "E_EVAL_NOT_FOUND",
      options.registry
        ? `run ${run.id}'s eval "${run.evalName}" is not registered on this server and the run names no eval file`
        : `run ${run.id} was not started from an eval file; pass --eval <file>`,
    );
  }
  // A dataset emptied since the run started is not a refusal: the run's copy of every sample
  // is executed, as for any row no longer in the dataset.
  return resolveEval(loaded.eval, { baseDir: loaded.baseDir, allowEmpty: true });
}
