import { stat } from "node:fs/promises";
import { dirname, extname, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { StetError, isStetError, thrownMessage } from "../core/errors.js";
import { asEval, isEval } from "./define-eval.js";
import type { Eval } from "./types.js";

const TS_EXTENSIONS = new Set([".ts", ".mts", ".cts"]);
const JS_EXTENSIONS = new Set([".js", ".mjs", ".cjs"]);

/** How long an eval module may take to load (`--load-timeout`), unless told otherwise. */
export const DEFAULT_LOAD_TIMEOUT_MS = 60_000;

export interface LoadEvalOptions {
  /**
   * How long importing the module (its top-level code) may take before the load is refused;
   * default `DEFAULT_LOAD_TIMEOUT_MS`.
   */
  timeoutMs?: number;
  /**
   * Import the module and its local imports again even when this process imported them before
   * (a watch loop): a JavaScript module goes through tsx, whose every import is a namespace of
   * its own; a TypeScript module's bundle is named by its content already.
   */
  fresh?: boolean;
}

export interface LoadedEvalFile {
  eval: Eval;
  /** Absolute path of the eval file. */
  path: string;
  /** The file's directory: relative dataset paths resolve against it. */
  baseDir: string;
}

/**
 * Loads an eval file (`.ts`, `.mts`, `.cts`, `.js`, `.mjs`, `.cjs`) from any directory and
 * returns its default export. TypeScript is transpiled by esbuild into a cache beside the
 * project's `node_modules`, or loaded by tsx where that cannot reproduce it (`importTypeScript`);
 * either way `import … from "stet"` inside the file resolves from the file's own `node_modules`. A default export that is a plain definition object is passed through
 * `defineEval`. A module whose loading has not finished after `timeoutMs` (a top-level await
 * that never settles) is refused with `E_EVAL_LOAD` naming the file; it is left behind, pending.
 *
 * @example
 * const { eval: ev, baseDir } = await loadEvalFile("evals/arithmetic.ts");
 * const resolved = await resolveEval(ev, { baseDir });
 */
export async function loadEvalFile(
  file: string,
  options: LoadEvalOptions = {},
): Promise<LoadedEvalFile> {
  const path = resolve(file);
  const extension = extname(path).toLowerCase();
  if (!TS_EXTENSIONS.has(extension) && !JS_EXTENSIONS.has(extension)) {
    throw new StetError(
      "E_EVAL_LOAD",
      `cannot load ${path}: an eval file ends in .ts, .mts, .cts, .js, .mjs or .cjs`,
    );
  }
  await assertFile(path);
  const timeoutMs = options.timeoutMs ?? DEFAULT_LOAD_TIMEOUT_MS;
  const imported = importModule(path, TS_EXTENSIONS.has(extension), options.fresh ?? false);
  const module = await withinLoadTimeout(imported, path, timeoutMs);
  return { eval: toEval(path, module), path, baseDir: dirname(path) };
}

async function assertFile(path: string): Promise<void> {
  const info = await stat(path).catch((cause: unknown) => {
    throw new StetError("E_EVAL_LOAD", `eval file not found: ${path}`, { cause });
  });
  if (!info.isFile()) throw new StetError("E_EVAL_LOAD", `eval file is not a file: ${path}`);
}

/**
 * `loading`, or `E_EVAL_LOAD` once `timeoutMs` passed. The timer is what keeps the process alive
 * meanwhile: a module whose top-level await never settles holds nothing else, and Node would
 * otherwise exit with code 13 ("unsettled top-level await") and no message.
 */
async function withinLoadTimeout<T>(loading: Promise<T>, path: string, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      reject(
        new StetError(
          "E_EVAL_LOAD",
          `eval file ${path} did not finish loading within ${ms} ms: its top-level code ` +
            "never settled (an await that never resolves?); fix it, or give it longer with --load-timeout <ms>",
          { details: { path, timeoutMs: ms } },
        ),
      );
    }, ms);
  });
  try {
    return await Promise.race([loading, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

async function importModule(
  path: string,
  typescript: boolean,
  fresh: boolean,
): Promise<Record<string, unknown>> {
  const url = pathToFileURL(path).href;
  try {
    if (!typescript && fresh) {
      // Node keeps every module (and a failed one's error) for the process's life, by URL.
      const { tsImport } = await import("tsx/esm/api");
      return (await tsImport(url, import.meta.url)) as Record<string, unknown>;
    }
    if (!typescript) return (await import(url)) as Record<string, unknown>;
    // Loaded on demand: .mjs evals need not pay for loading the TypeScript path.
    const { importTypeScript } = await import("./import-typescript.js");
    return await importTypeScript(path);
  } catch (cause) {
    const message = thrownMessage(cause);
    const hint = /Cannot find (module|package) 'stet'/.test(message)
      ? " (install stet in the eval's project: npm install --save-dev stet)"
      : "";
    throw new StetError("E_EVAL_LOAD", `failed to load eval file ${path}: ${message}${hint}`, {
      cause,
    });
  }
}

/**
 * tsx compiles a `.ts` file outside a `"type": "module"` package to CommonJS, and Node exposes
 * that module's `exports` object, with its own `default`, as the default export.
 */
function unwrapCommonJs(module: Record<string, unknown>): Record<string, unknown> {
  const exports = module.default;
  if (!isPlainObject(exports) || exports.__esModule !== true) return module;
  const { __esModule: _, ...names } = exports;
  return names;
}

/**
 * The module's default export as an eval, or E_EVAL_LOAD saying why not. Whatever reading the
 * export throws (a getter, a proxy's trap) is the eval file's problem too, named as such.
 */
function toEval(path: string, imported: Record<string, unknown>): Eval {
  let problem: string;
  try {
    const module = unwrapCommonJs(imported);
    const exported = module.default;
    if (isEval(exported) || isPlainObject(exported)) return asEval(exported);
    problem = describeExport(module);
  } catch (cause) {
    if (isStetError(cause, "E_CONFIG")) {
      throw new StetError("E_EVAL_LOAD", `${path}: ${cause.message}`, { cause });
    }
    if (isStetError(cause)) throw cause;
    throw new StetError(
      "E_EVAL_LOAD",
      `${path}: reading its default export threw: ${thrownMessage(cause)}`,
      { cause },
    );
  }
  throw new StetError(
    "E_EVAL_LOAD",
    `${path} must default-export an eval (export default defineEval({ … })), but ${problem}`,
  );
}

function describeExport(module: Record<string, unknown>): string {
  if (!("default" in module)) {
    const names = Object.keys(module);
    return `it has no default export${names.length > 0 ? ` (it exports ${names.join(", ")})` : ""}`;
  }
  const value = module.default;
  if (value === null) return "its default export is null";
  if (typeof value === "function")
    return `its default export is a function (${value.name || "anonymous"})`;
  if (Array.isArray(value)) return "its default export is an array";
  if (typeof value === "object")
    return `its default export is a ${value.constructor?.name ?? "object"}`;
  return `its default export is ${typeof value === "string" ? "a string" : String(value)}`;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (value === null || typeof value !== "object") return false;
  const proto: unknown = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}
