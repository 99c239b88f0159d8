import type { Attempt } from "../core/types.js";

/**
 * What becomes of a key after one of its attempts is committed:
 * - `scored`: its outcome;
 * - `errored`: an error is its outcome (its retries ran out, or a scorer error's retries did);
 * - `rescore`: a scorer threw and retries are left: the stored output is scored again, never
 *   solved again;
 * - `abandoned`: the execution stops; the error stands and a resume executes the key again;
 * - `retry`: another attempt.
 */
export type RetryVerdict = "scored" | "errored" | "rescore" | "abandoned" | "retry";

/**
 * The retry policy: the verdict on attempt `index` (0 for the first) of a key allowed `retries`
 * retries. `halted` is asked only when the verdict hangs on it (an error with retries left, not
 * a scorer's): it may stop the execution as it answers (the spend cap's dispatch rule).
 *
 * @example retryVerdict({ status: "error", error: { type: "provider", message: "429" } }, 0, 2, () => false) // "retry"
 */
export function retryVerdict(
  attempt: Pick<Attempt, "status" | "error">,
  index: number,
  retries: number,
  halted: () => boolean,
): RetryVerdict {
  if (attempt.status === "scored") return "scored";
  const scorerError = attempt.error?.type === "scorer";
  if (scorerError && index < retries) return "rescore";
  if (index >= retries || scorerError) return "errored";
  return halted() ? "abandoned" : "retry";
}

/** Whether the attempt is its key's outcome in this invocation (what the progress counts). */
export function isFinal(verdict: RetryVerdict): boolean {
  return verdict !== "retry" && verdict !== "rescore";
}
