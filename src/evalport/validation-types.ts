/** The EvalPort document kinds stet validates. A `result` is one line of a Results JSONL. */
export type DocumentKind = "resultset" | "suite" | "testcase" | "grader" | "result";

/**
 * One problem found in a document.
 *
 * `path` is a JSON Pointer (RFC 6901) into the document (`""` is the document itself), e.g.
 * `/results/0/grader_results/1/score`. `code` is stable and machine-readable: `schema.<ajv
 * keyword>` for JSON Schema violations (`schema.minimum`, `schema.required`, ...), or a
 * cross-field rule (`result.duplicate_attempt`, `suite.dangling_grader_ref`, ...), or
 * `json.syntax` / `file.*` for input that is not a document at all. `file`, `line` and
 * `column` (1-based) say where in a file the problem is, when it is known.
 */
export interface ValidationError {
  path: string;
  code: string;
  message: string;
  file?: string;
  line?: number;
  column?: number;
}

/** What `validateDocument` and `validateFile` return; invalid input is data, not a throw. */
export interface ValidationResult {
  valid: boolean;
  /** The kind validated against; `undefined` when it could not be told (see `kind.unknown`). */
  kind: DocumentKind | undefined;
  errors: ValidationError[];
  /** Errors found past a caller's `maxErrors` (`validateJsonLines`): counted, not listed. */
  omitted?: number;
}

/** A plain JSON object (not an array, not null). */
export function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** Appends RFC 6901-escaped segments to a JSON Pointer. */
export function pointer(base: string, ...segments: Array<string | number>): string {
  return segments.reduce<string>(
    (out, s) => `${out}/${String(s).replaceAll("~", "~0").replaceAll("/", "~1")}`,
    base,
  );
}
