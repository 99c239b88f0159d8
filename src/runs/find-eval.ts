import { realpathSync } from "node:fs";
import { resolve } from "node:path";
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
  /**
   * A server's rule: only a registered eval may execute, and only for a run started from that
   * very file (or from no file). Nothing else is loaded; `evalFile` is ignored.
   */
  onlyRegistered?: boolean;
  /** How long loading an eval module may take (`--load-timeout`); default `loadEvalFile`'s. */
  loadTimeoutMs?: number;
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
  return (await findEvalSource(run, options)).eval;
}

/**
 * `findEval`, with the file the eval was loaded from (what a run's identity hashes).
 *
 * @example const { eval: ev, path } = await findEvalSource(run, { evalFile: flags.eval });
 */
export async function findEvalSource(
  run: Run,
  options: FindEvalOptions = {},
): Promise<{ eval: EngineEval; path: string }> {
  if (options.onlyRegistered) return resolved(registeredEval(run, options.registry));
  const path = options.evalFile;
  const load = (file: string) =>
    loadEvalSource(
      file,
      options.loadTimeoutMs === undefined ? {} : { timeoutMs: options.loadTimeoutMs },
    );
  let loaded: LoadedEvalFile | undefined = path === undefined ? undefined : await load(path);
  loaded ??= options.registry?.get(run.evalName);
  if (!loaded && run.config.evalPath) loaded = await load(run.config.evalPath);
  if (!loaded) {
    throw new StetError(
      "E_EVAL_NOT_FOUND",
      options.registry
        ? `run ${run.id}'s eval "${run.evalName}" is not registered on this server and the run names no eval file`
        : `run ${run.id} was not started from an eval file; pass --eval <file>`,
    );
  }
  return resolved(loaded);
}

async function resolved(loaded: LoadedEvalFile): Promise<{ eval: EngineEval; path: string }> {
  // A dataset emptied since the run started is not a refusal: the run's copy of every sample
  // is executed, as for any row no longer in the dataset.
  const ev = await resolveEval(loaded.eval, { baseDir: loaded.baseDir, allowEmpty: true });
  return { eval: ev, path: loaded.path };
}

/**
 * The registered eval a server may execute for `run`. A run started from a file must have been
 * started from the registered one: an eval of the same name elsewhere on disk is someone else's
 * code, and the server never imports it. Throws `E_EVAL_NOT_ALLOWED` or `E_EVAL_NOT_FOUND`.
 */
function registeredEval(run: Run, registry: EvalLookup | undefined): LoadedEvalFile {
  const loaded = registry?.get(run.evalName);
  const recorded = run.config.evalPath;
  if (recorded !== undefined && !(loaded && samePath(loaded.path, recorded))) {
    throw new StetError(
      "E_EVAL_NOT_ALLOWED",
      `run ${run.id} was started from ${recorded}, which is not one of this server's evals ` +
        `(its --evals directory); the server executes nothing from outside it. ` +
        `Resume it where that file is: stet resume ${run.id}`,
      { details: { runId: run.id, evalPath: recorded } },
    );
  }
  if (!loaded) {
    throw new StetError(
      "E_EVAL_NOT_FOUND",
      `run ${run.id}'s eval "${run.evalName}" is not registered on this server`,
    );
  }
  return loaded;
}

function samePath(a: string, b: string): boolean {
  return canonicalPath(a) === canonicalPath(b);
}

function canonicalPath(path: string): string {
  try {
    return realpathSync(path);
  } catch {
    return resolve(path);
  }
}
