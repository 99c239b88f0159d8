import type { ContentfulStatusCode } from "hono/utils/http-status";
import { isStetError, type StetError, type StetErrorCode } from "../core/errors.js";

/** The stable codes of `{ error: { code, message } }` bodies. */
export type ApiErrorCode =
  | "invalid_request"
  | "unauthorized"
  | "rate_limited"
  | "forbidden_host"
  | "cross_origin"
  | "unsupported_media_type"
  | "body_too_large"
  | "too_many_streams"
  | "not_found"
  | "run_not_found"
  | "eval_not_found"
  | "eval_not_allowed"
  | "sample_not_found"
  | "benchmark_not_found"
  | "run_active"
  | "run_not_running"
  | "nothing_to_resume"
  | "no_results"
  | "changed_samples"
  | "eval_changed"
  | "different_evals"
  | "no_baseline"
  | "baseline_mismatch"
  | "run_taken_over"
  | "distributed_run"
  | "already_scored"
  | "illegal_transition"
  | "eval_load_failed"
  | "dataset_invalid"
  | "store_unavailable"
  | "endpoint_failed"
  | "internal";

/** An error the API answers with as it is: a status, a stable code and a public message. */
export class ApiError extends Error {
  override readonly name = "ApiError";

  constructor(
    readonly status: ContentfulStatusCode,
    readonly code: ApiErrorCode,
    message: string,
  ) {
    super(message);
  }
}

/** The one map from the library's error codes to HTTP. */
const byStetCode: Record<StetErrorCode, [ContentfulStatusCode, ApiErrorCode]> = {
  E_USAGE: [400, "invalid_request"],
  E_CONFIG: [400, "invalid_request"],
  E_INVALID_INPUT: [400, "invalid_request"],
  E_NOTHING_TO_RESUME: [400, "nothing_to_resume"],
  E_RUN_NOT_FOUND: [404, "run_not_found"],
  E_RUN_ACTIVE: [409, "run_active"],
  E_RUN_NOT_RUNNING: [409, "run_not_running"],
  E_EVAL_NOT_FOUND: [404, "eval_not_found"],
  E_EVAL_NOT_ALLOWED: [403, "eval_not_allowed"],
  E_CHANGED_SAMPLES: [409, "changed_samples"],
  E_EVAL_CHANGED: [409, "eval_changed"],
  E_DIFFERENT_EVALS: [400, "different_evals"],
  E_NO_BASELINE: [404, "no_baseline"],
  E_BASELINE_MISMATCH: [409, "baseline_mismatch"],
  E_FENCED: [409, "run_taken_over"],
  E_DISTRIBUTED: [409, "distributed_run"],
  E_ALREADY_SCORED: [409, "already_scored"],
  E_ILLEGAL_TRANSITION: [409, "illegal_transition"],
  E_DATASET: [422, "dataset_invalid"],
  E_DUPLICATE_ID: [422, "dataset_invalid"],
  E_EVAL_LOAD: [500, "eval_load_failed"],
  E_STORE: [503, "store_unavailable"],
  E_STORE_UNWRITABLE: [503, "store_unavailable"],
  E_STORE_CORRUPT: [503, "store_unavailable"],
  // The run's model endpoint, upstream of this server, refused it: a bad gateway, not a bad request.
  E_ENDPOINT: [502, "endpoint_failed"],
};

/**
 * What any thrown value becomes on the wire. A StetError keeps its message (written for people,
 * never a stack); anything else is an internal error whose details stay in the server's log.
 *
 * @example toApiError(new StetError("E_RUN_ACTIVE", "run r_1 is being executed by …")).status // 409
 */
export function toApiError(error: unknown): ApiError {
  if (error instanceof ApiError) return error;
  if (isStetError(error)) {
    const [status, code] = byStetCode[error.code];
    return new ApiError(status, code, publicMessage(error));
  }
  return new ApiError(500, "internal", "internal error; see the server log");
}

/** A StetError's message for API clients: an unknown run is named without the store's location. */
function publicMessage(error: StetError): string {
  const runId = error.details?.runId;
  if (error.code === "E_RUN_NOT_FOUND" && typeof runId === "string") {
    return `no run with id "${runId}"`;
  }
  return error.message;
}
