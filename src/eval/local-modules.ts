import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, extname, isAbsolute, relative, resolve, sep } from "node:path";

const MODULE_EXTENSIONS = new Set([".ts", ".mts", ".cts", ".tsx", ".js", ".mjs", ".cjs", ".jsx"]);

/**
 * The local modules an eval file imports, directly or not (its packages aside), each with the
 * sha256 (first 16 hex digits) of its bytes, by its path relative to the eval's folder: what a
 * function solver's or scorer's identity covers besides its own source, so that editing a helper
 * module changes the eval. Found the way the TypeScript loader bundles the graph (esbuild,
 * packages external, nothing written). The eval file itself is not listed (its own hash is the
 * identity's `evalFileSha256`). Undefined for a file that is not a module, or a graph esbuild
 * cannot walk (the identity then covers the functions' own sources only, as before).
 *
 * @example localModules("/p/evals/qa.ts") // { "lib/prompt.ts": "3f2a…" }
 */
export function localModules(evalPath: string): Record<string, string> | undefined {
  if (!MODULE_EXTENSIONS.has(extname(evalPath).toLowerCase())) return undefined;
  const workDir = dirname(evalPath);
  let inputs: string[];
  try {
    // Required here, not imported: evals without function solvers or scorers never load it.
    const { buildSync } = createRequire(import.meta.url)("esbuild") as typeof import("esbuild");
    const result = buildSync({
      entryPoints: [evalPath],
      absWorkingDir: workDir,
      bundle: true,
      packages: "external",
      format: "esm",
      platform: "node",
      write: false,
      metafile: true,
      logLevel: "silent",
    });
    inputs = Object.keys(result.metafile.inputs).map((p) => resolve(workDir, p));
  } catch {
    return undefined;
  }
  const modules: Record<string, string> = {};
  for (const input of inputs.sort()) {
    if (input === resolve(evalPath) || input.split(sep).includes("node_modules")) continue;
    const name = relative(workDir, input);
    const key = isAbsolute(name) ? input : name.split(sep).join("/");
    modules[key] = hash(input);
  }
  return modules;
}

function hash(path: string): string {
  try {
    return createHash("sha256").update(readFileSync(path)).digest("hex").slice(0, 16);
  } catch {
    return "unreadable";
  }
}
