import { extname } from "node:path";
import { loadSuite } from "../evalport/load-suite.js";
import { loadEvalFile, type LoadedEvalFile } from "./load-eval-file.js";

/**
 * Loads what `stet run` and `stet resume` are given: an EvalPort suite (`.json`, see
 * `loadSuite`) or an eval module (`.ts`, `.mjs`, …, see `loadEvalFile`).
 *
 * @example
 * const { eval: ev, path, baseDir } = await loadEvalSource("suites/qa.json");
 * const resolved = await resolveEval(ev, { baseDir });
 */
export async function loadEvalSource(file: string): Promise<LoadedEvalFile> {
  return extname(file).toLowerCase() === ".json" ? loadSuite(file) : loadEvalFile(file);
}
