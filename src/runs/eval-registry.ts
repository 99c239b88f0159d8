import { realpathSync } from "node:fs";
import { readdir, readFile } from "node:fs/promises";
import { basename, extname, join, resolve } from "node:path";
import { StetError, thrownMessage } from "../core/errors.js";
import type { LoadedEvalFile, LoadEvalOptions } from "../eval/load-eval-file.js";
import { detectKind } from "../evalport/detect-kind.js";
import { loadEvalSource } from "./load-eval-source.js";

const EVAL_EXTENSIONS = new Set([".ts", ".mts", ".cts", ".js", ".mjs", ".cjs", ".json"]);

export interface EvalProblem {
  file: string;
  message: string;
}

/** The evals a server may start, by their `name`. */
export interface EvalRegistry {
  get(name: string): LoadedEvalFile | undefined;
  /** The eval registered from the file at `path` (the same file, whatever path names it). */
  fromFile(path: string): LoadedEvalFile | undefined;
  list(): { name: string; path: string }[];
  /** Files of the directory that look like evals but could not be registered, and why. */
  problems: EvalProblem[];
  /** JSON files of the directory that are no EvalPort suite (`package.json`): not evals. */
  skipped: string[];
}

/**
 * A registry of already loaded evals. A run names its eval by `name`, so two evals of one name
 * are refused (StetError `E_CONFIG` naming their files) rather than one of them hidden.
 *
 * @example createEvalRegistry([{ eval: myEval, path: "/evals/my.ts", baseDir: "/evals" }])
 */
export function createEvalRegistry(
  loaded: readonly LoadedEvalFile[],
  problems: EvalProblem[] = [],
  skipped: string[] = [],
): EvalRegistry {
  assertUniqueNames(loaded);
  const byName = new Map(loaded.map((e) => [e.eval.name, e]));
  const byFile = new Map(loaded.map((e) => [canonicalPath(e.path), e]));
  return {
    get: (name) => byName.get(name),
    fromFile: (path) => byFile.get(canonicalPath(path)),
    list: () => loaded.map((e) => ({ name: e.eval.name, path: e.path })),
    problems,
    skipped,
  };
}

function assertUniqueNames(loaded: readonly LoadedEvalFile[]): void {
  const files = new Map<string, string[]>();
  for (const e of loaded) files.set(e.eval.name, [...(files.get(e.eval.name) ?? []), e.path]);
  const clashes = [...files].filter(([, paths]) => paths.length > 1);
  if (clashes.length === 0) return;
  const lines = clashes.map(([name, paths]) => `  "${name}": ${paths.join(", ")}`);
  throw new StetError(
    "E_CONFIG",
    `evals must have different names (a run names its eval by name), but these share one:\n` +
      `${lines.join("\n")}\nRename all but one of each, or move them out of the directory.`,
    { details: { duplicates: Object.fromEntries(clashes) } },
  );
}

/**
 * Loads every eval module and EvalPort suite in `dir` (not recursive), in file-name order. A
 * module or suite that fails to load (or does not finish loading within `options.timeoutMs`) is
 * reported in `problems` instead of stopping the server; a JSON file that is no suite
 * (`package.json`, `tsconfig.json`) is only listed in `skipped`. Two evals of one name are
 * refused (StetError `E_CONFIG`).
 *
 * @example
 * const evals = await loadEvalRegistry("./evals");
 * evals.get("arithmetic"); // { eval, path, baseDir }
 */
export async function loadEvalRegistry(
  dir: string,
  options: LoadEvalOptions = {},
): Promise<EvalRegistry> {
  const root = resolve(dir);
  const entries = await readdir(root, { withFileTypes: true }).catch((cause: unknown) => {
    throw new StetError("E_CONFIG", `cannot read the evals directory ${root}`, { cause });
  });
  const files = entries
    .filter((e) => e.isFile() && EVAL_EXTENSIONS.has(extname(e.name).toLowerCase()))
    .map((e) => join(root, e.name))
    .sort();
  const loaded: LoadedEvalFile[] = [];
  const problems: EvalProblem[] = [];
  const skipped: string[] = [];
  for (const file of files) {
    const kind = await fileKind(file);
    if (kind === "other") continue;
    if (kind === "not-a-suite") {
      skipped.push(file);
      continue;
    }
    try {
      loaded.push(await loadEvalSource(file, options));
    } catch (error) {
      problems.push({ file, message: thrownMessage(error) });
    }
  }
  return createEvalRegistry(loaded, problems, skipped);
}

/**
 * Whether `file` is worth loading. Importing a module runs it: only one that says it defines an
 * eval (`defineEval` or `export default`) is, so a helper script beside the evals (a program
 * under test, a build script) is never executed. A JSON file is loaded only when it is shaped
 * like an EvalPort suite (`detectKind`), so a project's `package.json` is not validated as one.
 */
async function fileKind(file: string): Promise<"eval" | "not-a-suite" | "other"> {
  const text = await readFile(file, "utf8").catch(() => "");
  if (extname(file).toLowerCase() !== ".json") {
    return /\bdefineEval\b|\bexport\s+default\b/.test(text) ? "eval" : "other";
  }
  return detectKind(parsedOrUndefined(text)) === "suite" ? "eval" : "not-a-suite";
}

function parsedOrUndefined(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    // Not JSON at all (a tsconfig.json with comments): no suite either.
    return undefined;
  }
}

/**
 * The one line a shell prints for the JSON files it left alone, or undefined when there are none.
 *
 * @example skippedLine(["/p/package.json"]) // "not EvalPort suites, ignored: package.json"
 */
export function skippedLine(skipped: readonly string[]): string | undefined {
  if (skipped.length === 0) return undefined;
  return `not EvalPort suites, ignored: ${skipped.map((f) => basename(f)).join(", ")}`;
}

function canonicalPath(path: string): string {
  try {
    return realpathSync(path);
  } catch {
    return resolve(path);
  }
}
