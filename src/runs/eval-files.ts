import { resolve } from "node:path";
import { localModules } from "../eval/local-modules.js";

/**
 * The files an eval is made of: the eval file, the local modules it imports (the graph its
 * TypeScript loader bundled, else the relative imports followed from its text, see
 * `localModules`) and its dataset file, as absolute paths. What `stet run --watch` watches.
 *
 * @example evalFiles("/p/qa.ts", "/p/qa.jsonl") // ["/p/qa.ts", "/p/lib/prompt.ts", "/p/qa.jsonl"]
 */
export function evalFiles(evalPath: string | undefined, datasetFile: string | undefined): string[] {
  const files = new Set<string>();
  if (evalPath !== undefined) {
    const entry = resolve(evalPath);
    files.add(entry);
    for (const name of Object.keys(localModules(entry) ?? {}))
      files.add(resolve(entry, "..", name));
  }
  if (datasetFile !== undefined) files.add(resolve(datasetFile));
  return [...files];
}
