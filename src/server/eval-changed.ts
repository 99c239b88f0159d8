import type { StetError } from "../core/errors.js";
import { ApiError } from "./api-error.js";

/**
 * An `E_EVAL_CHANGED` refusal (see `checkEval`) as the API says it, 409 `eval_changed`: the
 * CLI's flag and the commands its message gives become the request field and the routes that do
 * the same here.
 *
 * @example throw evalChangedApiError(refusal.error, "r_1");
 */
export function evalChangedApiError(error: StetError, runId: string): ApiError {
  const path = `/api/runs/${encodeURIComponent(runId)}`;
  const allow = '{"allowEvalChange": true}';
  const message = error.message
    .replace(/^ {2}stet rescore .*$/m, (line) =>
      line.includes(" --allow-eval-change")
        ? `  POST ${path}/rescore ${allow}`
        : `  POST ${path}/rescore`,
    )
    .replace(/^ {2}stet resume .*$/m, `  POST ${path}/resume`)
    .replace(/pass --allow-eval-change/g, `send ${allow}`)
    .replace(/--allow-eval-change/g, `"allowEvalChange"`);
  return new ApiError(409, "eval_changed", message);
}
