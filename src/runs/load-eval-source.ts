import { extname } from "node:path";
import { loadEvalFile, type LoadedEvalFile, type LoadEvalOptions } from "../eval/load-eval-file.js";

/**
 * Loads what `stet run` and `stet resume` are given: an EvalPort suite (`.json`, see
 * `loadSuite`) or an eval module (`.ts`, `.mjs`, …, see `loadEvalFile`, whose load timeout
 * `options` sets).
 *
 * @example
 * const { eval: ev, path, baseDir } = await loadEvalSource("suites/qa.json");
 * const resolved = await resolveEval(ev, { baseDir });
 */
export async function loadEvalSource(
  file: string,
  options: LoadEvalOptions = {},
): Promise<LoadedEvalFile> {
  if (extname(file).toLowerCase() !== ".json") return loadEvalFile(file, options);
  // Suites need ajv and the EvalPort schemas; eval modules should not pay for loading them.
  const { loadSuite } = await import("../evalport/load-suite.js");
  return loadSuite(file);
}
