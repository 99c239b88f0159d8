import { realpathSync } from "node:fs";
import { resolve } from "node:path";
import { StetError } from "../core/errors.js";
import type { EngineEval } from "../core/eval.js";
import type { Run, SampleRecord } from "../core/types.js";
import type { LoadedEvalFile } from "../eval/load-eval-file.js";
import { resolveEvalIndexed } from "../eval/resolve-eval.js";
import { datasetEval } from "../eval/dataset-eval.js";
import type { EvalProblem } from "./eval-registry.js";
import { loadEvalSource } from "./load-eval-source.js";

/** Evals known by name, such as a server's `--evals` directory (see `loadEvalRegistry`). */
export interface EvalLookup {
  get(name: string): LoadedEvalFile | undefined;
  /** The eval registered from the file at `path`, when the lookup knows its files. */
  fromFile?(path: string): LoadedEvalFile | undefined;
  /** Files that could not be registered, and why. */
  problems?: readonly EvalProblem[];
}

export interface FindEvalOptions {
  /** An eval file named by the user (`--eval`): it wins, e.g. when the run's file moved. */
  evalFile?: string;
  /** Registered evals: the one with the run's eval name comes next. */
  registry?: EvalLookup;
  /**
   * An eval the caller loaded and asks for (a server's start request names a registered eval):
   * it is the candidate instead of the registry's eval of the run's name.
   */
  loaded?: LoadedEvalFile;
  /**
   * A server's rule: only a registered eval may execute, and only for a run started from that
   * very file (or from no file). Nothing else is loaded; `evalFile` is ignored.
   */
  onlyRegistered?: boolean;
  /** How long loading an eval module may take (`--load-timeout`); default `loadEvalFile`'s. */
  loadTimeoutMs?: number;
  /** `--cache` / `--no-cache`: overrides the eval's `cache`. */
  cache?: boolean | undefined;
  /** `--batch`: the provider batches on, whatever the eval says. */
  batch?: boolean | undefined;
  /** Leave the eval's dataset unread (a rescore's: see `ResolveEvalOptions.withoutSamples`). */
  withoutSamples?: boolean;
  /**
   * The run's recorded `datasetStamp`: a dataset file that still has it is not read (`unchanged`,
   * see `ResolveEvalOptions.stamp`).
   */
  datasetStamp?: string;
  /**
   * A dataset file of at least `minBytes` is left unread, as pages (`ResolveEvalOptions.paged`):
   * a resume whose file still has the run's stamp executes from the snapshot instead.
   */
  paged?: { minBytes: number };
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

/** An eval `findEvalSource` found, resolved. */
export interface FoundEval {
  eval: EngineEval;
  /** The file it was loaded from (what a run's identity hashes); none for a dataset run. */
  path: string | undefined;
  /** Its samples by id, as loading them indexed them (see `loadSampleIndex`). */
  samplesById: ReadonlyMap<string, SampleRecord>;
  /**
   * The dataset file's stamp is `FindEvalOptions.datasetStamp`: its samples were not read
   * (`samples` and `samplesById` empty), and the run's snapshot is every sample as it has it.
   */
  unchanged?: true;
}

/**
 * `findEval`, with the file the eval was loaded from (what a run's identity hashes).
 *
 * @example const { eval: ev, path } = await findEvalSource(run, { evalFile: flags.eval });
 */
export async function findEvalSource(run: Run, options: FindEvalOptions = {}): Promise<FoundEval> {
  if (options.onlyRegistered) {
    // Another eval altogether (a start request's, by name) is the identity check's to refuse
    // (`checkEval`), not a question of where its file is.
    const asked = options.loaded;
    if (asked && asked.eval.name !== run.evalName) return resolved(asked, options);
    const registered = registeredEval(run, options.registry);
    // A request's own per-sample limits (an API body's) replace the registered eval's.
    const limits = asked?.eval.limits;
    if (!limits || limits === registered.eval.limits) return resolved(registered, options);
    return resolved({ ...registered, eval: { ...registered.eval, limits } }, options);
  }
  const path = options.evalFile;
  const load = (file: string) =>
    loadEvalSource(
      file,
      options.loadTimeoutMs === undefined ? {} : { timeoutMs: options.loadTimeoutMs },
    );
  let loaded: LoadedEvalFile | undefined = path === undefined ? undefined : await load(path);
  loaded ??= options.registry?.get(run.evalName);
  if (!loaded && run.config.evalPath) loaded = await load(run.config.evalPath);
  // A dataset run (`stet run --dataset`): its eval is built again from what it recorded, and
  // has no file whose bytes its identity hashes.
  if (!loaded && run.config.datasetEval)
    return {
      ...(await resolved(datasetEval(run.config.datasetEval), options)),
      path: undefined,
    };
  if (!loaded) {
    throw new StetError(
      "E_EVAL_NOT_FOUND",
      options.registry
        ? `run ${run.id}'s eval "${run.evalName}" is not registered on this server and the run names no eval file`
        : `run ${run.id} was not started from an eval file; pass --eval <file>`,
    );
  }
  return resolved(loaded, options);
}

async function resolved(
  loaded: LoadedEvalFile,
  flags: Pick<FindEvalOptions, "cache" | "batch" | "withoutSamples" | "datasetStamp" | "paged">,
): Promise<FoundEval & { path: string }> {
  // A dataset emptied since the run started is not a refusal: the run's copy of every sample
  // is executed, as for any row no longer in the dataset.
  const found = await resolveEvalIndexed(loaded.eval, {
    baseDir: loaded.baseDir,
    allowEmpty: true,
    ...definedFlags(flags),
    ...(flags.withoutSamples ? { withoutSamples: true } : {}),
    ...(flags.datasetStamp === undefined ? {} : { stamp: flags.datasetStamp }),
    ...(flags.paged ? { paged: flags.paged } : {}),
  });
  return { ...found, path: loaded.path };
}

/**
 * The registered eval a server may execute for `run`. A run started from a file must have been
 * started from a registered one (found by the file, so a run of an eval renamed since still
 * finds it, and the identity check names the change): an eval of the same name elsewhere on
 * disk is someone else's code, and the server never imports it. A run that names no file takes
 * the eval of its name. Throws `E_EVAL_NOT_ALLOWED`, `E_EVAL_LOAD` (its file is registered but
 * failed to load) or `E_EVAL_NOT_FOUND`.
 */
function registeredEval(run: Run, registry: EvalLookup | undefined): LoadedEvalFile {
  const recorded = run.config.evalPath;
  if (recorded === undefined) {
    const loaded = registry?.get(run.evalName);
    if (loaded) return loaded;
    throw new StetError(
      "E_EVAL_NOT_FOUND",
      `run ${run.id}'s eval "${run.evalName}" is not registered on this server`,
    );
  }
  const loaded = registeredFile(registry, run.evalName, recorded);
  if (loaded) return loaded;
  const problem = registry?.problems?.find((p) => samePath(p.file, recorded));
  if (problem) {
    throw new StetError(
      "E_EVAL_LOAD",
      `run ${run.id} was started from ${recorded}, which this server failed to load when it ` +
        `started: ${problem.message}`,
      { details: { runId: run.id, evalPath: recorded } },
    );
  }
  throw new StetError(
    "E_EVAL_NOT_ALLOWED",
    `run ${run.id} was started from ${recorded}, which is not one of the evals this server ` +
      `loaded from its --evals directory when it started; it executes nothing else. ` +
      `Resume it where that file is: stet resume ${run.id}`,
    { details: { runId: run.id, evalPath: recorded } },
  );
}

/** The eval registered from `path`; by name and then the same file, when the lookup has no files. */
function registeredFile(
  registry: EvalLookup | undefined,
  name: string,
  path: string,
): LoadedEvalFile | undefined {
  if (registry?.fromFile) return registry.fromFile(path);
  const loaded = registry?.get(name);
  return loaded && samePath(loaded.path, path) ? loaded : undefined;
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

function definedFlags(flags: { cache?: boolean | undefined; batch?: boolean | undefined }) {
  return {
    ...(flags.cache === undefined ? {} : { cache: flags.cache }),
    ...(flags.batch === undefined ? {} : { batch: flags.batch }),
  };
}
