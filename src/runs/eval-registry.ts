import { readdir, readFile } from "node:fs/promises";
import { extname, join, resolve } from "node:path";
import { StetError, thrownMessage } from "../core/errors.js";
import type { LoadedEvalFile } from "../eval/load-eval-file.js";
import { loadEvalSource } from "./load-eval-source.js";

const EVAL_EXTENSIONS = new Set([".ts", ".mts", ".cts", ".js", ".mjs", ".cjs", ".json"]);

export interface EvalProblem {
  file: string;
  message: string;
}

/** The evals a server may start, by their `name`. */
export interface EvalRegistry {
  get(name: string): LoadedEvalFile | undefined;
  list(): { name: string; path: string }[];
  /** Files of the directory that could not be registered, and why. */
  problems: EvalProblem[];
}

/**
 * A registry of already loaded evals (first of a name wins; later ones become problems).
 *
 * @example createEvalRegistry([{ eval: myEval, path: "/evals/my.ts", baseDir: "/evals" }])
 */
export function createEvalRegistry(
  loaded: readonly LoadedEvalFile[],
  problems: EvalProblem[] = [],
): EvalRegistry {
  const byName = new Map<string, LoadedEvalFile>();
  for (const entry of loaded) {
    const held = byName.get(entry.eval.name);
    if (held) {
      problems.push({
        file: entry.path,
        message: `eval name "${entry.eval.name}" is already taken by ${held.path}`,
      });
    } else byName.set(entry.eval.name, entry);
  }
  return {
    get: (name) => byName.get(name),
    list: () => [...byName.values()].map((e) => ({ name: e.eval.name, path: e.path })),
    problems,
  };
}

/**
 * Loads every eval module and EvalPort suite in `dir` (not recursive), in file-name order. A file
 * that is not an eval is reported in `problems` instead of stopping the server.
 *
 * @example
 * const evals = await loadEvalRegistry("./evals");
 * evals.get("arithmetic"); // { eval, path, baseDir }
 */
export async function loadEvalRegistry(dir: string): Promise<EvalRegistry> {
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
  for (const file of files) {
    // Importing a module runs it: only import those that say they define an eval, so a helper
    // script beside the evals (a program under test, a build script) is never executed.
    if (!(await looksLikeEval(file))) continue;
    try {
      loaded.push(await loadEvalSource(file));
    } catch (error) {
      problems.push({ file, message: thrownMessage(error) });
    }
  }
  return createEvalRegistry(loaded, problems);
}

/** A suite is any .json (validation decides); a module must mention `defineEval` or `export default`. */
async function looksLikeEval(file: string): Promise<boolean> {
  if (extname(file).toLowerCase() === ".json") return true;
  const text = await readFile(file, "utf8").catch(() => "");
  return /\bdefineEval\b|\bexport\s+default\b/.test(text);
}
