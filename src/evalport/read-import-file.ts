import { createHash } from "node:crypto";
import { readFile } from "node:fs/promises";
import { resolve } from "node:path";
import * as z from "zod";
import { StetError, isStetError } from "../core/errors.js";
import { fallbackLineSchema, isFallbackLine } from "./fallback-line.js";
import { formatValidationError } from "./format-validation-error.js";
import { isPartial } from "./is-partial.js";
import { parseJson, refusalError } from "./parse-json.js";
import { fromResult, type ResultAttempt } from "./result-mapping.js";
import type { EvalPortResult, ResultSetDocument } from "./result-set-types.js";
import { validateDocument } from "./validate-document.js";
import { ErrorList, validateJsonLines } from "./validate-json-lines.js";
import { linesOf, textOf } from "./file-text.js";
import type { ValidationError } from "./validation-types.js";

export type ImportFormat = "resultset" | "results-jsonl" | "fallback-jsonl";

/** One attempt read from a file, and where it was: `results[3]` or `line 4`. */
export interface ImportRecord {
  attempt: ResultAttempt;
  where: string;
}

export interface ImportFile {
  /** Absolute path. */
  path: string;
  /** sha256 of the file's bytes, lowercase hex. */
  sha256: string;
  format: ImportFormat;
  records: ImportRecord[];
  /** The run a fallback file was written for. */
  runId?: string;
  /** A ResultSet that declares `openeval.partial`. */
  partial: boolean;
}

const SHOWN_ERRORS = 20;
/** The most errors a refusal holds and gives in its details; the rest are counted. */
const KEPT_ERRORS = 1_000;

/**
 * Reads a file to import: a ResultSet (`.json`), a Results JSONL (`stet run --output`), or the
 * engine's fallback JSONL (`<run>.fallback.jsonl`, lines `{ runId, ...AttemptDraft }`). With
 * `sha256`, the file's bytes must hash to it. The file is validated whole (EvalPort schemas and
 * rules, or the fallback line schema) and mapped with `fromResult`; any problem throws
 * StetError `E_INVALID_INPUT` listing the first errors as `file:line:col: /path: message [code]`
 * and counting the rest (its details hold the first `KEPT_ERRORS` and the count of the others).
 *
 * @example const file = await readImportFile("partial.json", { sha256: "9f86d0…" });
 */
export async function readImportFile(
  file: string,
  options: { sha256?: string } = {},
): Promise<ImportFile> {
  const { path, bytes, sha256 } = await hashedBytes(file);
  if (options.sha256 !== undefined && normalizeHex(options.sha256) !== sha256) {
    throw new StetError(
      "E_INVALID_INPUT",
      `sha256 mismatch for ${path}: expected ${normalizeHex(options.sha256)}, the file's bytes hash to ${sha256}; nothing was imported`,
      { details: { expected: options.sha256, actual: sha256 } },
    );
  }
  const base = { path, sha256 };
  if (!/\.(jsonl|ndjson)$/i.test(path)) {
    return { ...base, ...readResultSet(path, textOf(bytes, path, RESULT_SET, NO_WHOLE_TEXT)) };
  }
  // Lines decoded one at a time: a JSONL file is not limited by the longest string.
  const lines = linesOf(bytes, path);
  return {
    ...base,
    ...(isFallback(lines) ? readFallback(path, lines) : readResultLines(path, lines)),
  };
}

const RESULT_SET = "a ResultSet is read";
const NO_WHOLE_TEXT =
  "import the run's Results JSONL (`stet run --output`), which is read a line at a time, or copy the whole store (`stet backup`, `stet restore`); nothing was imported";

/**
 * A file's path and the sha256 of its bytes (what an import's provenance names it by,
 * `sha256:<hex>`); `E_INVALID_INPUT` naming the file when it cannot be read.
 *
 * @example const { sha256 } = await readHashed("partial.json");
 */
export async function readHashed(file: string): Promise<{ path: string; sha256: string }> {
  const { path, sha256 } = await hashedBytes(file);
  return { path, sha256 };
}

/** `readHashed` with the bytes it hashed (a Buffer: kept out of the public declarations). */
async function hashedBytes(file: string): Promise<{ path: string; bytes: Buffer; sha256: string }> {
  const path = resolve(file);
  const bytes = await readFile(path).catch((cause: unknown) => {
    const reason = (cause as NodeJS.ErrnoException).code ?? String(cause);
    throw new StetError("E_INVALID_INPUT", `cannot read ${path}: ${reason}`, { cause });
  });
  const sha256 = createHash("sha256").update(bytes).digest("hex");
  return { path, bytes, sha256 };
}

/**
 * A `--sha256` value as 64 lowercase hex digits: accepts `<hex>` or `sha256:<hex>`, any case.
 *
 * @example normalizeHex("SHA256:AB…") // "ab…"
 */
export function normalizeHex(value: string): string {
  const hex = value
    .trim()
    .replace(/^sha256:/i, "")
    .toLowerCase();
  if (!/^[0-9a-f]{64}$/.test(hex)) {
    throw new StetError("E_USAGE", `--sha256 expects 64 hex digits, got "${value}"`);
  }
  return hex;
}

type Parsed = Omit<ImportFile, "path" | "sha256">;

function readResultSet(path: string, text: string): Parsed {
  const parsed = parseJson(text);
  if (!parsed.ok)
    refuse(path, "ResultSet", [{ ...refusalError(parsed, "not valid JSON"), file: path }]);
  const validation = validateDocument(parsed.value, "resultset");
  if (!validation.valid)
    refuse(
      path,
      "ResultSet",
      validation.errors.map((e) => ({ file: path, ...e })),
    );
  const doc = parsed.value as ResultSetDocument;
  const fallbackTime = doc.completed_at ?? doc.started_at;
  const records = doc.results.map((result, i) =>
    mapResult(path, result, `results[${i}]`, fallbackTime),
  );
  return { format: "resultset", records, partial: isPartial(doc) };
}

function readResultLines(path: string, lines: Iterable<string>): Parsed {
  const validation = validateJsonLines(lines, {
    file: path,
    kind: "result",
    maxErrors: KEPT_ERRORS,
  });
  if (!validation.valid) refuse(path, "Results JSONL", validation.errors, validation.omitted);
  const fallbackTime = new Date().toISOString();
  const records: ImportRecord[] = [];
  let i = 0;
  for (const line of lines) {
    i++;
    if (line.trim() === "") continue;
    const result = JSON.parse(line) as EvalPortResult;
    records.push(mapResult(path, result, `line ${i}`, fallbackTime));
  }
  return { format: "results-jsonl", records, partial: false };
}

function readFallback(path: string, lines: Iterable<string>): Parsed {
  const errors = new ErrorList(KEPT_ERRORS);
  const records: ImportRecord[] = [];
  const runIds = new Set<string>();
  let line = 0;
  for (const raw of lines) {
    line++;
    if (raw.trim() === "") continue;
    const parsed = parseJson(raw);
    if (!parsed.ok) {
      errors.push({ ...refusalError(parsed, `line ${line} is not JSON`), file: path, line });
      continue;
    }
    const result = fallbackLineSchema.safeParse(parsed.value);
    if (!result.success) {
      if (errors.found === 0 && isExportRow(parsed.value)) throw exportRows(path, line);
      errors.push(...result.error.issues.map((issue) => zodError(path, line, issue)));
      continue;
    }
    const { runId, ...draft } = result.data;
    runIds.add(runId);
    // Once a line is refused the file is: its records are not needed.
    if (errors.found === 0) records.push({ attempt: draft, where: `line ${line}` });
  }
  if (errors.found > 0) refuse(path, "fallback JSONL", errors.kept, errors.omitted);
  if (runIds.size > 1) {
    throw new StetError(
      "E_INVALID_INPUT",
      `${path} mixes attempts of runs ${[...runIds].join(", ")}`,
    );
  }
  return {
    format: "fallback-jsonl",
    records,
    partial: false,
    ...(runIds.size === 1 && { runId: [...runIds][0]! }),
  };
}

/**
 * Whether a line is a row of `stet export --format jsonl` (`cli/export-rows.ts`: a key's outcome,
 * its attempt's number and provenance's kind), which has the fallback line's `runId` and
 * `sampleId` but is not an attempt to restore.
 */
function isExportRow(value: unknown): boolean {
  return (
    typeof value === "object" &&
    value !== null &&
    "attempt" in value &&
    "provenance" in value &&
    typeof value.provenance === "string" &&
    !("fingerprint" in value)
  );
}

function exportRows(path: string, line: number): StetError {
  return new StetError(
    "E_INVALID_INPUT",
    `${path}:${line} is a row of \`stet export --format jsonl\` (a key's outcome), which \`stet import\` does not read: export the run with \`--format resultset\`, or import the Results JSONL its \`--output\` wrote; nothing was imported`,
  );
}

function isFallback(lines: Iterable<string>): boolean {
  let first: string | undefined;
  for (const line of lines) {
    if (line.trim() === "") continue;
    first = line;
    break;
  }
  const parsed = first === undefined ? undefined : parseJson(first);
  return parsed?.ok === true && isFallbackLine(parsed.value);
}

function mapResult(
  path: string,
  result: EvalPortResult,
  where: string,
  fallbackTime: string,
): ImportRecord {
  try {
    return { attempt: fromResult(result, { fallbackTime }), where };
  } catch (error) {
    if (!isStetError(error)) throw error;
    throw new StetError("E_INVALID_INPUT", `${path}: ${where}: ${error.message}`, { cause: error });
  }
}

function zodError(file: string, line: number, issue: z.core.$ZodIssue): ValidationError {
  const pointer = issue.path.map((p) => `/${String(p)}`).join("");
  return { file, line, path: pointer, code: `fallback.${issue.code}`, message: issue.message };
}

/** Refuses the file: its first errors shown, `KEPT_ERRORS` in the details, the rest counted. */
function refuse(path: string, what: string, errors: ValidationError[], omitted = 0): never {
  const shown = errors.slice(0, SHOWN_ERRORS).map((e) => `  ${formatValidationError(e)}`);
  const more = errors.length + omitted - shown.length;
  const kept = errors.slice(0, KEPT_ERRORS);
  throw new StetError(
    "E_INVALID_INPUT",
    `${path} is not a valid ${what}; nothing was imported:\n${shown.join("\n")}${more > 0 ? `\n  … and ${more} more` : ""}`,
    { details: { errors: kept, omitted: errors.length + omitted - kept.length } },
  );
}
