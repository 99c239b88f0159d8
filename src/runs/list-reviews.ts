import { currentReviews, keyId, type Review } from "../core/reviews.js";
import type { Store } from "../store/types.js";
import { requireRun } from "./require-run.js";
import { reviewedOutcomes } from "./reviewed-outcomes.js";

/** A stored review and whether it counts now (its reviewer's latest, of the current attempt). */
export type ListedReview = Review & { current: boolean };

/**
 * Every review of the run, oldest first, superseded ones included (the history), each marked
 * `current` when it counts for the metrics.
 *
 * @example const history = await listReviews(store, "r_abc");
 */
export async function listReviews(store: Store, runId: string): Promise<ListedReview[]> {
  await requireRun(store, runId);
  const reviews = await store.reviews.list(runId);
  if (reviews.length === 0) return [];
  // The outcomes of the keys reviewed only, not every key of the run.
  const { attempts } = await reviewedOutcomes(store, runId, reviews);
  const counting = new Set(
    currentReviews(reviews, (k) => attempts.get(keyId(k))).map((r) => r.seq),
  );
  return reviews.map((r) => ({ ...r, current: counting.has(r.seq) }));
}
