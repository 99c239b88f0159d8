import { StetError } from "../core/errors.js";
import { reviewValue, type ReviewInput } from "../core/review-input.js";
import { keyId, type Review, type ReviewDraft } from "../core/reviews.js";
import type { Store } from "../store/types.js";
import { requireRun } from "./require-run.js";
import { reviewedOutcomes } from "./reviewed-outcomes.js";

export interface RecordReviewsOptions {
  store: Store;
  runId: string;
  reviews: readonly ReviewInput[];
  /** The reviewer of every review that names none (`--reviewer`, `STET_REVIEWER`, the server's). */
  reviewer?: string;
  /** Where the reviews came from, for errors (`body.reviews`, `reviews.csv line`). */
  where?: (index: number) => string;
  now?: () => Date;
}

/**
 * Stores people's reviews of a run's keys, each as a scoring of the key's current attempt (its
 * outcome) by its reviewer: all of them in one transaction, or none when one is refused (an
 * unknown sample or epoch, a key with no attempt, an attempt that is no longer current, no
 * reviewer). Attempts and scorings are never touched.
 *
 * @example await recordReviews({ store, runId, reviews: [{ sampleId: "q1", epoch: 1, scorer: "human", verdict: "pass" }], reviewer: "ada" });
 */
export async function recordReviews(options: RecordReviewsOptions): Promise<Review[]> {
  const { store, runId } = options;
  const where = options.where ?? ((i: number) => `review ${i + 1}`);
  const run = await requireRun(store, runId);
  const { samples, attempts } = await reviewedOutcomes(store, runId, options.reviews);
  const createdAt = (options.now?.() ?? new Date()).toISOString();
  const drafts = options.reviews.map((input, index): ReviewDraft => {
    const refuse = (why: string) =>
      new StetError("E_INVALID_INPUT", `${where(index)}: ${why}`, { details: { runId } });
    if (!samples.has(input.sampleId))
      throw refuse(`run ${runId} has no sample "${input.sampleId}"`);
    if (input.epoch > run.config.epochs)
      throw refuse(`epoch ${input.epoch} is beyond the run's ${run.config.epochs}`);
    const attempt = attempts.get(keyId(input));
    if (attempt === undefined)
      throw refuse(`sample "${input.sampleId}" epoch ${input.epoch} has no attempt to review`);
    if (input.attempt !== undefined && input.attempt !== attempt)
      throw refuse(
        `attempt ${input.attempt} is not the current attempt (${attempt}) of ` +
          `sample "${input.sampleId}" epoch ${input.epoch}`,
      );
    const reviewer = input.reviewer ?? options.reviewer;
    if (!reviewer) throw refuse("no reviewer: name one (--reviewer, STET_REVIEWER, reviewer)");
    return {
      sampleId: input.sampleId,
      epoch: input.epoch,
      attempt,
      scorer: input.scorer,
      reviewer,
      value: reviewValue(input),
      note: input.note ?? null,
      createdAt,
    };
  });
  if (drafts.length === 0) return [];
  return store.reviews.record(runId, drafts);
}
