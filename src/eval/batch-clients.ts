import type { BatchClient } from "../core/batch.js";
import { submissionClient } from "../solvers/batch-call.js";

/**
 * The batch client of a recorded submission (its provider and endpoint, the provider's key from
 * the environment): what `runs/` uses to reach the batches of a run no process executes.
 *
 * @example clientOfSubmission(submission).cancel(submission.batchId!)
 */
export function clientOfSubmission(submission: {
  provider: string;
  endpoint: string;
}): BatchClient {
  return submissionClient(submission);
}
