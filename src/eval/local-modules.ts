import { createHash } from "node:crypto";
import { readFileSync, statSync } from "node:fs";
import { basename, dirname, extname, isAbsolute, relative, resolve, sep } from "node:path";
import { cacheDirFor, manifestPath, readManifest } from "./ts-cache.js";

const MODULE_EXTENSIONS = [".ts", ".mts", ".cts", ".tsx", ".js", ".mjs", ".cjs", ".jsx"];
const CONFIG_FILES = new Set(["tsconfig.json", "package.json"]);
/** `from "./x"`, `import "./x"`, `import("./x")`, `require("./x")`: relative specifiers only. */
const RELATIVE_IMPORT =
  /(?:\bfrom\s*|\bimport\s*\(?\s*|\brequire\s*\(\s*)(["'])(\.{1,2}\/[^"'\n]+)\1/g;

/**
 * The local modules an eval file imports, directly or not (its packages aside), each with the
 * sha256 (first 16 hex digits) of its bytes, by its path relative to the eval's folder: what a
 * function solver's or scorer's identity covers besides its own source, so that editing a helper
 * module changes the eval. A TypeScript eval's graph is the one its loader bundled (the cache's
 * manifest lists every source it read); otherwise the relative imports are followed from the
 * file's text. The eval file itself is not listed (its own hash is the identity's
 * `evalFileSha256`). Undefined for a file that is not a module.
 *
 * @example localModules("/p/evals/qa.ts") // { "lib/prompt.ts": "3f2a…" }
 */
export function localModules(evalPath: string): Record<string, string> | undefined {
  const entry = resolve(evalPath);
  if (!MODULE_EXTENSIONS.includes(extname(entry).toLowerCase())) return undefined;
  const files = bundledSources(entry) ?? followImports(entry);
  const modules: Record<string, string> = {};
  for (const file of [...files].sort()) {
    if (file === entry || file.split(sep).includes("node_modules")) continue;
    const name = relative(dirname(entry), file);
    modules[isAbsolute(name) ? file : name.split(sep).join("/")] = hash(file);
  }
  return modules;
}

/** The sources the TypeScript loader's cache says it bundled, when they are as it read them. */
function bundledSources(entry: string): string[] | undefined {
  const cacheDir = cacheDirFor(entry);
  const manifest = cacheDir === undefined ? undefined : readManifest(manifestPath(cacheDir, entry));
  if (!manifest) return undefined;
  const sources = Object.entries(manifest.files).filter(
    ([file, sha]) => sha !== null && !CONFIG_FILES.has(basename(file)),
  );
  const current = sources.every(([file, sha]) => fullHash(file) === sha);
  return current ? sources.map(([file]) => file) : undefined;
}

/** The files reached from `entry` through relative imports, `entry` included. */
function followImports(entry: string): Set<string> {
  const seen = new Set<string>();
  const queue = [entry];
  while (queue.length > 0) {
    const file = queue.pop()!;
    if (seen.has(file)) continue;
    seen.add(file);
    let text: string;
    try {
      text = readFileSync(file, "utf8");
    } catch {
      continue;
    }
    for (const match of text.matchAll(RELATIVE_IMPORT)) {
      const found = resolveLocal(dirname(file), match[2]!);
      if (found !== undefined) queue.push(found);
    }
  }
  return seen;
}

/** A relative specifier as Node or TypeScript resolve it: as given, with an extension, an index. */
function resolveLocal(dir: string, specifier: string): string | undefined {
  const base = resolve(dir, specifier);
  const stem = base.replace(/\.(c|m)?js$/, "");
  const candidates = [
    base,
    ...MODULE_EXTENSIONS.map((ext) => `${stem}${ext}`),
    ...MODULE_EXTENSIONS.map((ext) => `${base}${sep}index${ext}`),
  ];
  return candidates.find((path) => statSync(path, { throwIfNoEntry: false })?.isFile());
}

function fullHash(path: string): string | null {
  try {
    return createHash("sha256").update(readFileSync(path)).digest("hex");
  } catch {
    return null;
  }
}

function hash(path: string): string {
  return fullHash(path)?.slice(0, 16) ?? "unreadable";
}
