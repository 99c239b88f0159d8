import { createHash, randomBytes } from "node:crypto";
import {
  mkdirSync,
  readFileSync,
  realpathSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { createRequire } from "node:module";
import { basename, dirname, join } from "node:path";
import * as z from "zod";

/**
 * Bumped whenever what the fast path emits for the same sources changes (transpile options, the
 * banner): every manifest of an older format is rebuilt.
 */
export const CACHE_FORMAT = 1;

const manifestSchema = z.object({
  format: z.literal(CACHE_FORMAT),
  esbuild: z.string(),
  /** `esm`: import `output`. `tsx`: the graph needs the full loader (the reason says why). */
  loader: z.enum(["esm", "tsx"]),
  output: z.string().optional(),
  outputHash: z.string().optional(),
  reason: z.string().optional(),
  /** What the output was made from: absolute path → sha256 of its bytes, or null (absent). */
  files: z.record(z.string(), z.string().nullable()),
});

export type Manifest = z.infer<typeof manifestSchema>;

/**
 * Where an eval's transpiled graph is cached: `node_modules/.cache/stet/ts/` of the nearest
 * folder above the eval that has a `node_modules`. The cached module imports the user's packages
 * (and `stet`) by their bare names, and Node resolves those from the importing file's folder
 * upwards: from there it finds exactly the `node_modules` folders the eval itself would. A cache
 * under `$XDG_CACHE_HOME` or the store's folder would resolve them from somewhere else. Undefined
 * when no folder above the eval has a `node_modules`, or it is a symlink: no place then resolves
 * as the eval does.
 */
export function cacheDirFor(evalPath: string): string | undefined {
  const scope = moduleScope(dirname(evalPath));
  if (scope === undefined) return undefined;
  // Node resolves from a module's real path: from a `node_modules` that is a symlink to another
  // tree, the cached module would look for packages in that tree instead.
  const modules = join(scope, "node_modules");
  if (realpathSync(modules) !== join(realpathSync(scope), "node_modules")) return undefined;
  return join(modules, ".cache", "stet", "ts");
}

/** The nearest folder, from `dir` up, that holds a `node_modules` folder. */
export function moduleScope(dir: string): string | undefined {
  return findUp(dir, (at) => isKind(join(at, "node_modules"), "directory"));
}

/** The closest file called `name` from `dir` up, as esbuild and TypeScript find a `tsconfig.json`. */
export function nearestFile(dir: string, name: string): string | undefined {
  const at = findUp(dir, (folder) => isKind(join(folder, name), "file"));
  return at === undefined ? undefined : join(at, name);
}

/**
 * The configuration that shapes how the files in `dirs` are transpiled and resolved: for each,
 * the nearest `tsconfig.json` and `package.json` with their hashes, and every closer place one
 * could appear as null (absent), so that adding one there invalidates the cache too.
 */
export function configFiles(dirs: Iterable<string>): Map<string, string | null> {
  const files = new Map<string, string | null>();
  for (const dir of dirs) {
    for (const name of ["tsconfig.json", "package.json"]) {
      findUp(dir, (at) => {
        const path = join(at, name);
        const hash = files.has(path) ? files.get(path)! : hashOrNull(path);
        files.set(path, hash);
        return hash !== null;
      });
    }
  }
  return files;
}

function findUp(dir: string, found: (folder: string) => boolean): string | undefined {
  for (let at = dir; ; at = dirname(at)) {
    if (found(at)) return at;
    if (dirname(at) === at) return undefined;
  }
}

function isKind(path: string, kind: "file" | "directory"): boolean {
  const info = statSync(path, { throwIfNoEntry: false });
  return kind === "file" ? (info?.isFile() ?? false) : (info?.isDirectory() ?? false);
}

/** One manifest per eval file, named by its path: the latest build of that eval. */
export function manifestPath(cacheDir: string, evalPath: string): string {
  return join(cacheDir, `${sha256(evalPath).slice(0, 24)}.json`);
}

/**
 * The version of the esbuild that stet would transpile with, part of every cache key; undefined
 * when it is not installed (the fast path is then off).
 */
export function esbuildVersion(): string | undefined {
  try {
    const require = createRequire(import.meta.url);
    const manifest = require("esbuild/package.json") as { version?: unknown };
    return typeof manifest.version === "string" ? manifest.version : undefined;
  } catch {
    return undefined;
  }
}

/** The manifest at `path`, or undefined when there is none or it is not one (torn, foreign). */
export function readManifest(path: string): Manifest | undefined {
  const parsed = manifestSchema.safeParse(parseJson(readOrNull(path)));
  return parsed.success ? parsed.data : undefined;
}

/**
 * Whether a manifest still holds: made by this esbuild, every file it was made from unchanged (or
 * still absent), and its output intact. Anything else is rebuilt.
 */
export function isCurrent(manifest: Manifest, cacheDir: string, esbuild: string): boolean {
  if (manifest.esbuild !== esbuild) return false;
  for (const [file, hash] of Object.entries(manifest.files)) {
    if (hashOrNull(file) !== hash) return false;
  }
  if (manifest.loader === "tsx") return true;
  const output = manifest.output;
  if (output === undefined || basename(output) !== output) return false;
  return hashOrNull(join(cacheDir, output)) === manifest.outputHash;
}

/** sha256 of a file's bytes, or null when it does not exist. */
export function hashOrNull(path: string): string | null {
  const bytes = readOrNull(path);
  return bytes === null ? null : sha256(bytes);
}

export function sha256(data: string | Buffer): string {
  return createHash("sha256").update(data).digest("hex");
}

function readOrNull(path: string): Buffer | null {
  try {
    return readFileSync(path);
  } catch {
    return null;
  }
}

function parseJson(bytes: Buffer | null): unknown {
  if (bytes === null) return undefined;
  try {
    return JSON.parse(bytes.toString("utf8"));
  } catch {
    return undefined;
  }
}

/**
 * Writes a cache file whole or not at all: the text goes to a temporary file beside it that is
 * then renamed over it, so a reader never sees half a file, and two processes warming the same
 * entry at once each rename a complete file (the last one stays). Not fsynced: a cache file lost
 * to a crash is rebuilt, and the manifest's hash of its output catches one that is torn.
 */
export function writeCacheFile(path: string, text: string): void {
  mkdirSync(dirname(path), { recursive: true });
  const temp = join(dirname(path), `.${basename(path)}.${randomBytes(6).toString("hex")}.tmp`);
  try {
    writeFileSync(temp, text);
    renameSync(temp, path);
  } catch (error) {
    rmSync(temp, { force: true });
    throw error;
  }
}
