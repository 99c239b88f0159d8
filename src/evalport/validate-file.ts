import { readFile } from "node:fs/promises";
import { dirname, resolve } from "node:path";
import { StetError } from "../core/errors.js";
import { locatePointer } from "./locate-pointer.js";
import { parseJson, refusalError } from "./parse-json.js";
import { repeatedKeyError } from "./repeated-key-error.js";
import { suiteGraderIds } from "./suite-rules.js";
import { validateDocument } from "./validate-document.js";
import { validateJsonLines } from "./validate-json-lines.js";
import { linesOf, textOf } from "./file-text.js";
import {
  type DocumentKind,
  type ValidationError,
  type ValidationResult,
  isObject,
} from "./validation-types.js";

/**
 * Validates an EvalPort file: a `.json` suite, test case or ResultSet, or a `.jsonl` of Results
 * or test cases (each line validated; errors carry `file` and `line`). A suite's
 * `test_cases_file` is read too, relative to the suite, and its lines are checked against the
 * suite's graders. Malformed JSON is an error naming the line and column, and so is an object
 * that repeats a key (`json.duplicate_key`). Invalid input is
 * returned as data; only a file that cannot be read throws (`StetError` `E_INVALID_INPUT`).
 *
 * @example
 * const result = await validateFile("results.json");
 * if (!result.valid) for (const e of result.errors) console.error(formatValidationError(e));
 */
export async function validateFile(
  path: string,
  options: { kind?: DocumentKind | "auto" } = {},
): Promise<ValidationResult> {
  const bytes = await readBytes(path);
  // Lines decoded one at a time: a JSONL file is not limited by the longest string.
  if (/\.(jsonl|ndjson)$/i.test(path)) {
    return validateJsonLines(linesOf(bytes, path), { file: path, ...options });
  }
  const text = textOf(bytes, path, "a JSON document is read", "nothing was validated");
  const parsed = parseJson(text);
  const kind = options.kind === "auto" ? undefined : options.kind;
  if (!parsed.ok) {
    return {
      valid: false,
      kind,
      errors: [{ ...refusalError(parsed, "not valid JSON"), file: path }],
    };
  }
  const result = validateDocument(parsed.value, kind ?? "auto");
  const errors: ValidationError[] = result.errors.map((e) => ({ ...e, file: path }));
  const repeated = repeatedKeyError(text, parsed.value);
  if (repeated) errors.unshift({ ...repeated, file: path });
  if (errors.some((e) => e.line === undefined)) await locateErrors(text, errors);
  if (result.kind === "suite" && isObject(parsed.value)) {
    errors.push(...(await testCasesFileErrors(path, parsed.value)));
  }
  return { valid: errors.length === 0, kind: result.kind, errors };
}

/** Gives each error its value's line and column in `text` (jsonc-parser loads only for errors). */
async function locateErrors(text: string, errors: ValidationError[]): Promise<void> {
  const { parseTree } = await import("jsonc-parser");
  const root = parseTree(text);
  for (const [i, error] of errors.entries()) {
    if (error.line !== undefined) continue;
    const at = locatePointer(root, text, error.path);
    if (at) errors[i] = { ...error, ...at };
  }
}

async function testCasesFileErrors(
  suitePath: string,
  suite: Record<string, unknown>,
): Promise<ValidationError[]> {
  const file = suite.test_cases_file;
  if (typeof file !== "string" || suite.test_cases !== undefined) return [];
  const casesPath = resolve(dirname(suitePath), file);
  let bytes: Buffer;
  try {
    bytes = await readBytes(casesPath);
  } catch (error) {
    const message = `test_cases_file ${JSON.stringify(file)}: ${(error as Error).message}`;
    return [
      {
        path: "/test_cases_file",
        code: "suite.test_cases_file_unreadable",
        message,
        file: suitePath,
      },
    ];
  }
  const graderIds = suiteGraderIds(suite);
  const lines = linesOf(bytes, casesPath);
  return validateJsonLines(lines, { file: casesPath, kind: "testcase", graderIds }).errors;
}

async function readBytes(path: string): Promise<Buffer> {
  try {
    return await readFile(path);
  } catch (error) {
    const reason = (error as NodeJS.ErrnoException).code ?? (error as Error).message;
    throw new StetError("E_INVALID_INPUT", `cannot read ${path}: ${reason}`, { cause: error });
  }
}
