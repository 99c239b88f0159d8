/**
 * Stable error codes. The CLI maps them to exit codes, the server to HTTP statuses; both
 * print the message and never a stack trace.
 */
export type StetErrorCode =
  | "E_USAGE" // bad flag or argument (exit 2)
  | "E_CONFIG" // bad eval definition or option (exit 1)
  | "E_DATASET" // unreadable or malformed dataset (exit 1)
  | "E_DUPLICATE_ID" // two dataset rows with one id (exit 1)
  | "E_EVAL_LOAD" // eval file not found or without a default export (exit 1)
  | "E_RUN_NOT_FOUND" // unknown run id (exit 1)
  | "E_RUN_ACTIVE" // run owned by a live process (exit 5)
  | "E_RUN_NOT_RUNNING" // a cancel of a run that is not running (exit 1)
  | "E_EVAL_NOT_FOUND" // no eval known for a run: pass --eval (exit 2)
  | "E_EVAL_NOT_ALLOWED" // a server asked to execute an eval from outside its --evals (exit 1)
  | "E_NOTHING_TO_RESUME"
  | "E_CHANGED_SAMPLES" // dataset rows changed since the run started (exit 1)
  | "E_EVAL_CHANGED" // the eval given to a resume differs from the run's identity (exit 1)
  | "E_DIFFERENT_EVALS" // a diff of two runs of different evals, not allowed (exit 2)
  | "E_NO_BASELINE" // `--baseline` found no run to compare with (exit 7)
  | "E_BASELINE_MISMATCH" // the baseline's identity or samples differ from the run's (exit 2)
  | "E_FENCED" // a write by an owner that lost the run: another took it over (exit 5)
  | "E_DISTRIBUTED" // a single-owner operation (claim, rescore) asked of a distributed run (exit 1)
  | "E_ALREADY_SCORED" // an attempt for a key that already has a scored attempt
  | "E_STORE" // the store failed (exit 1)
  | "E_STORE_CORRUPT" // the store's file is not an intact SQLite database (exit 1)
  | "E_STORE_UNWRITABLE" // the store stayed unwritable; attempts went to the fallback file
  | "E_ENDPOINT" // the first samples all failed alike at the endpoint; run interrupted (exit 1)
  | "E_ILLEGAL_TRANSITION"
  | "E_INVALID_INPUT"; // malformed JSON/JSONL, schema violation

/**
 * The one error class of the library. `code` is stable and machine-readable; `message` is
 * for people and names what is wrong and where.
 *
 * @example throw new StetError("E_RUN_NOT_FOUND", `no run with id "${id}"`);
 */
export class StetError extends Error {
  override readonly name = "StetError";
  readonly code: StetErrorCode;
  readonly details: Record<string, unknown> | undefined;

  constructor(
    code: StetErrorCode,
    message: string,
    options: { cause?: unknown; details?: Record<string, unknown> } = {},
  ) {
    super(message, { cause: options.cause });
    this.code = code;
    this.details = options.details;
  }
}

/** True when `error` is a StetError, optionally with the given code. */
export function isStetError(error: unknown, code?: StetErrorCode): error is StetError {
  return error instanceof StetError && (code === undefined || error.code === code);
}

/**
 * What a thrown value says, whatever was thrown: an Error's message, else the value as text.
 * Never throws itself, whatever user code threw: a value whose `toString` or `message` throws,
 * or an object without a prototype, is described by its type instead.
 *
 * @example thrownMessage(new Error("boom")) // "boom"
 * @example thrownMessage(42) // "42"
 */
export function thrownMessage(thrown: unknown): string {
  try {
    return thrown instanceof Error ? String(thrown.message) : String(thrown);
  } catch {
    return `a thrown ${typeof thrown} that cannot be shown as text`;
  }
}
