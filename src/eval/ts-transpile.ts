import { readFile } from "node:fs/promises";
import { dirname, extname, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { build, type BuildFailure, type Loader, type Message, type Plugin } from "esbuild";
import { moduleScope, nearestFile, sha256 } from "./ts-cache.js";

/** What transpiling an eval's local import graph gave. */
export type Transpiled =
  | { loader: "esm"; code: string; files: Map<string, string | null> }
  | { loader: "tsx"; reason: string; files: Map<string, string | null> };

const LOADERS: Record<string, Loader> = {
  ".ts": "ts",
  ".mts": "ts",
  ".cts": "ts",
  ".tsx": "tsx",
  ".js": "js",
  ".mjs": "js",
  ".cjs": "js",
  ".jsx": "jsx",
};

const TARGET = "node20";
const OTHER_IMPORT_META = /\bimport\s*\.\s*meta\b(?!\s*\.\s*(url|filename|dirname)\b)/;

/**
 * Bundles an eval file and the local files it imports into one ES module with an inline source
 * map, for `outfile` (the map's paths are relative to it). Packages stay imports by their bare
 * names (`packages: "external"`), so the cached module loads the user's `node_modules` and
 * `stet` as the eval would. Each local file is transpiled on its own first, with its nearest
 * `tsconfig.json` and its own `import.meta.url`, `import.meta.dirname`, `__dirname` and
 * `__filename`: bundled, they would all be the cache file's. A syntax or resolution error
 * throws, naming `file:line:col` of the source.
 *
 * Returns `loader: "tsx"` (with why) for a graph this cannot reproduce: a file that uses
 * `import.meta` otherwise (`import.meta.resolve`), a local file under another `node_modules`
 * scope than the eval's (its packages would resolve from the wrong place), or an import of a
 * file type esbuild has no loader for. `files` holds each source read, with its sha256.
 *
 * @example const out = await transpileEval("/p/evals/qa.ts", "/p/node_modules/.cache/stet/ts/x.mjs");
 */
export async function transpileEval(entry: string, outfile: string): Promise<Transpiled> {
  const workDir = dirname(entry);
  const files = new Map<string, string | null>();
  const needsTsx: string[] = [];
  let result;
  try {
    result = await build({
      entryPoints: [entry],
      absWorkingDir: workDir,
      outfile,
      bundle: true,
      packages: "external",
      format: "esm",
      platform: "node",
      target: TARGET,
      write: false,
      metafile: true,
      sourcemap: "inline",
      sourcesContent: false,
      // CommonJS `require` in a local file (a .ts eval in a package without "type": "module" may
      // use it) resolves from the eval file, as it would under the CommonJS loader.
      banner: {
        js: `import { createRequire as __stetCreateRequire } from "node:module"; const require = __stetCreateRequire(${JSON.stringify(pathToFileURL(entry).href)});`,
      },
      plugins: [perFileTranspile(workDir, files, needsTsx)],
      logLevel: "silent",
    });
  } catch (error) {
    const errors = (error as Partial<BuildFailure>).errors;
    if (!Array.isArray(errors) || errors.length === 0) throw error;
    const unloadable = errors.find((e) => e.text.startsWith("No loader is configured"));
    if (unloadable) return { loader: "tsx", reason: formatMessage(workDir, unloadable), files };
    throw new Error(formatErrors(workDir, errors), { cause: error });
  }
  const scope = moduleScope(workDir);
  for (const input of Object.keys(result.metafile.inputs).map((p) => resolve(workDir, p))) {
    if (!files.has(input)) files.set(input, await hashFile(input));
    if (moduleScope(dirname(input)) !== scope) {
      needsTsx.push(`${input} is under another node_modules scope than the eval`);
    }
  }
  if (needsTsx.length > 0) return { loader: "tsx", reason: needsTsx[0]!, files };
  return { loader: "esm", code: result.outputFiles[0]!.text, files };
}

/**
 * An onLoad hook that transpiles every local JavaScript or TypeScript file by itself (the bytes it
 * hashes are the bytes it transpiles) with that file's own `import.meta` and `__dirname`.
 */
function perFileTranspile(
  workDir: string,
  files: Map<string, string | null>,
  needsTsx: string[],
): Plugin {
  return {
    name: "stet-per-file",
    setup(bundler) {
      bundler.onLoad({ filter: /\.[cm]?[jt]sx?$/ }, async ({ path }) => {
        const bytes = await readFile(path);
        files.set(path, sha256(bytes));
        const text = bytes.toString("utf8");
        // What `define` does not replace (import.meta.resolve, import.meta itself) would see the
        // cache file's URL. Read from the source: a mention in a comment only costs the fast path.
        if (OTHER_IMPORT_META.test(text)) {
          needsTsx.push(`${path} uses import.meta beyond url, filename and dirname`);
        }
        try {
          return { contents: await transpileFile(workDir, path, text), loader: "js" };
        } catch (error) {
          const errors = (error as Partial<BuildFailure>).errors;
          if (!Array.isArray(errors)) throw error;
          return { errors };
        }
      });
    },
  };
}

async function transpileFile(workDir: string, path: string, contents: string): Promise<string> {
  const dir = dirname(path);
  const tsconfig = nearestFile(dir, "tsconfig.json");
  const result = await build({
    stdin: { contents, sourcefile: path, resolveDir: dir, loader: LOADERS[extname(path)] ?? "js" },
    absWorkingDir: workDir,
    // Given, not found: a build from stdin does not look for one.
    ...(tsconfig === undefined ? {} : { tsconfig }),
    outfile: path,
    allowOverwrite: true,
    write: false,
    platform: "node",
    target: TARGET,
    sourcemap: "inline",
    sourcesContent: false,
    define: {
      "import.meta.url": JSON.stringify(pathToFileURL(path).href),
      "import.meta.filename": JSON.stringify(path),
      "import.meta.dirname": JSON.stringify(dir),
      __filename: JSON.stringify(path),
      __dirname: JSON.stringify(dir),
    },
    logLevel: "silent",
  });
  return result.outputFiles[0]!.text;
}

async function hashFile(path: string): Promise<string | null> {
  try {
    return sha256(await readFile(path));
  } catch {
    return null;
  }
}

function formatErrors(workDir: string, errors: readonly Message[]): string {
  const first = formatMessage(workDir, errors[0]!);
  return errors.length === 1 ? first : `${first} (and ${errors.length - 1} more errors)`;
}

function formatMessage(workDir: string, message: Message): string {
  const at = message.location;
  if (!at) return message.text;
  return `${resolve(workDir, at.file)}:${at.line}:${at.column + 1}: ${message.text}`;
}
