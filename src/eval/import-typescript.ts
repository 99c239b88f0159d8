import { existsSync, rmSync } from "node:fs";
import { dirname, extname, join } from "node:path";
import { pathToFileURL } from "node:url";
import {
  CACHE_FORMAT,
  cacheDirFor,
  configFiles,
  esbuildVersion,
  isCurrent,
  manifestPath,
  readManifest,
  sha256,
  writeCacheFile,
  type Manifest,
} from "./ts-cache.js";

type Module = Record<string, unknown>;

/** An eval's entry in the cache: where it is, and what it says. */
interface Cached {
  cacheDir: string;
  manifest: Manifest;
}

/** A manifest just made, with the text of its output when it has one. */
interface Built {
  manifest: Manifest;
  code?: string;
}

/**
 * Imports a TypeScript eval file. The fast path: the file and its local imports, bundled by
 * esbuild into one cached ES module (`transpileEval`, run only when a source changed), imported
 * directly, with source maps on so stack traces name the `.ts` lines. tsx loads what the fast
 * path cannot reproduce: a `.cts` file; an eval with no `node_modules` above it, a symlinked one,
 * or one the cache cannot be written to; a graph `transpileEval` hands over; and a cached module
 * whose imports do not resolve from the cache (tsx then loads, or fails, as it always did).
 * `STET_TS_LOADER=tsx` turns the fast path off.
 */
export async function importTypeScript(path: string): Promise<Module> {
  const cached =
    process.env.STET_TS_LOADER === "tsx" || extname(path).toLowerCase() === ".cts"
      ? undefined
      : await cachedEntry(path);
  if (cached?.manifest.loader !== "esm") return importWithTsx(path);
  // Only from here on: modules loaded earlier (stet's own) keep their plain stack frames.
  process.setSourceMapsEnabled(true);
  const output = join(cached.cacheDir, cached.manifest.output!);
  try {
    return (await import(pathToFileURL(output).href)) as Module;
  } catch (error) {
    if (!isResolutionFailure(error)) throw error;
    // A static import that does not resolve stops the module before any of it runs (one that is
    // dynamic and awaited at load may not: docs/writing-evals.md says so).
    const module = await importWithTsx(path);
    // Gone: another process rebuilt the entry (an edit) after this one read it; nothing to learn.
    if (!existsSync(output)) return module;
    const { output: _output, outputHash: _hash, ...rest } = cached.manifest;
    const reason = `its imports do not resolve from the cache: ${(error as Error).message}`;
    record(
      path,
      cached.cacheDir,
      { manifest: { ...rest, loader: "tsx", reason } },
      cached.manifest,
    );
    return module;
  }
}

async function importWithTsx(path: string): Promise<Module> {
  // Loaded on demand: registering and warming the TypeScript loader costs most of a second.
  const { tsImport } = await import("tsx/esm/api");
  return (await tsImport(pathToFileURL(path).href, import.meta.url)) as Module;
}

/** The eval's manifest, rebuilt first unless the cache holds it for the sources as they are. */
async function cachedEntry(path: string): Promise<Cached | undefined> {
  const cacheDir = cacheDirFor(path);
  const esbuild = esbuildVersion();
  if (cacheDir === undefined || esbuild === undefined) return undefined;
  const previous = readManifest(manifestPath(cacheDir, path));
  if (previous && isCurrent(previous, cacheDir, esbuild)) return { cacheDir, manifest: previous };
  const built = await rebuild(path, cacheDir, esbuild);
  return record(path, cacheDir, built, previous)
    ? { cacheDir, manifest: built.manifest }
    : undefined;
}

/** Transpiles the eval's graph (`transpileEval`) into a manifest naming its output. */
async function rebuild(path: string, cacheDir: string, esbuild: string): Promise<Built> {
  const { transpileEval } = await import("./ts-transpile.js");
  const result = await transpileEval(path, join(cacheDir, "eval.mjs"));
  const sources = [...result.files.keys()];
  const files = Object.fromEntries([
    ...result.files,
    ...configFiles(sources.map((file) => dirname(file))),
  ]);
  const header = { format: CACHE_FORMAT, esbuild, files } as const;
  if (result.loader === "tsx")
    return { manifest: { ...header, loader: "tsx", reason: result.reason } };
  const hash = sha256(result.code);
  const output = `${hash.slice(0, 32)}.mjs`;
  return { manifest: { ...header, loader: "esm", output, outputHash: hash }, code: result.code };
}

/**
 * Writes a manifest, its output first, so a reader of the manifest always finds its output, then
 * removes the output of the manifest it replaces. False when the cache cannot be written (a
 * read-only `node_modules`): tsx loads the eval instead.
 */
function record(
  path: string,
  cacheDir: string,
  built: Built,
  previous: Manifest | undefined,
): boolean {
  const { manifest, code } = built;
  try {
    if (code !== undefined && manifest.output)
      writeCacheFile(join(cacheDir, manifest.output), code);
    writeCacheFile(manifestPath(cacheDir, path), `${JSON.stringify(manifest)}\n`);
  } catch {
    return false;
  }
  // A process that read the old manifest and finds its output gone falls back to tsx.
  if (previous?.output !== undefined && previous.output !== manifest.output) {
    rmSync(join(cacheDir, previous.output), { force: true });
  }
  return true;
}

const RESOLUTION_FAILURES = new Set([
  "ERR_MODULE_NOT_FOUND",
  "ERR_PACKAGE_PATH_NOT_EXPORTED",
  "ERR_PACKAGE_IMPORT_NOT_DEFINED",
  "ERR_UNSUPPORTED_DIR_IMPORT",
  "ERR_UNKNOWN_FILE_EXTENSION",
]);

function isResolutionFailure(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === "string" && RESOLUTION_FAILURES.has(code);
}
