import { detectKind } from "./detect-kind.js";
import { parseJson, refusalError } from "./parse-json.js";
import { repeatedKeyError } from "./repeated-key-error.js";
import { type LocatedTestCase, testCaseSetErrors } from "./suite-rules.js";
import { validateDocument } from "./validate-document.js";
import type { DocumentKind, ValidationError, ValidationResult } from "./validation-types.js";

export interface JsonLinesOptions {
  /** Named in each error's `file`. */
  file?: string;
  /** What every line is; by default told from the first line that parses. */
  kind?: DocumentKind | "auto";
  /** The suite's grader ids, to check the test cases' references (a suite's test_cases_file). */
  graderIds?: ReadonlySet<string>;
  /** List at most this many errors; those past it are counted in `omitted` (default: all). */
  maxErrors?: number;
}

/**
 * Validates JSON Lines: one Result (stet's `--output` file) or one test case (a suite's
 * `test_cases_file`) per line. Each error carries its 1-based `line`; paths are JSON Pointers
 * within that line's document. Blank lines are skipped; a line that is not JSON is a
 * `json.syntax` error naming its line and column, and a line whose object repeats a key a
 * `json.duplicate_key` error. Test case ids must be unique across lines.
 *
 * @example validateJsonLines('{"test_case_id":"a","passed":true,"grader_results":[]}\n{oops\n', { file: "r.jsonl" })
 * // { valid: false, kind: "result", errors: [{ file: "r.jsonl", line: 2, column: 2, code: "json.syntax", ... }] }
 */
export function validateJsonLines(
  /** The file's text, or its lines (`linesOf`). */
  text: string | Iterable<string>,
  options: JsonLinesOptions = {},
): ValidationResult {
  const { file } = options;
  let kind = options.kind === "auto" ? undefined : options.kind;
  const errors = new ErrorList(options.maxErrors);
  const testCases: LocatedTestCase[] = [];
  let records = 0;
  let line = 0;
  for (const raw of typeof text === "string" ? text.split("\n") : text) {
    line++;
    if (raw.trim() === "") continue;
    records++;
    const where = { ...(file !== undefined && { file }), line };
    const parsed = parseJson(raw);
    if (!parsed.ok) {
      errors.push({ ...refusalError(parsed, `line ${line} is not JSON`), ...where });
      continue;
    }
    const repeated = repeatedKeyError(raw, parsed.value);
    if (repeated) errors.push({ ...repeated, ...where });
    kind ??= detectKind(parsed.value);
    const result = validateDocument(parsed.value, kind ?? "auto");
    errors.push(...result.errors.map((e) => ({ ...e, ...where })));
    if (kind === "testcase") testCases.push({ value: parsed.value, path: "", ...where });
  }
  if (records === 0) {
    errors.push({ path: "", code: "file.empty", message: "no JSON lines", ...(file && { file }) });
  }
  // validateDocument already checked each line's own inline graders; keep only the cross-line
  // findings (duplicate ids, dangling references) from the set check.
  const crossLine = testCaseSetErrors(testCases, options.graderIds).filter(
    (e) => e.code === "suite.duplicate_test_case_id" || e.code === "suite.dangling_grader_ref",
  );
  errors.push(...crossLine);
  const omitted = errors.omitted > 0 ? { omitted: errors.omitted } : {};
  return { valid: errors.found === 0, kind, errors: sortByLine(errors.kept), ...omitted };
}

/**
 * Errors as found, the first `max` kept and the rest counted: a file broken on every one of its
 * million lines is refused naming its first problems, without holding the others.
 */
export class ErrorList {
  readonly kept: ValidationError[] = [];
  omitted = 0;

  constructor(private readonly max = Infinity) {}

  get found(): number {
    return this.kept.length + this.omitted;
  }

  push(...errors: ValidationError[]): void {
    for (const error of errors) {
      if (this.kept.length < this.max) this.kept.push(error);
      else this.omitted++;
    }
  }
}

function sortByLine(errors: ValidationError[]): ValidationError[] {
  return errors
    .map((e, i) => ({ e, i }))
    .sort((a, b) => (a.e.line ?? Infinity) - (b.e.line ?? Infinity) || a.i - b.i)
    .map(({ e }) => e);
}
