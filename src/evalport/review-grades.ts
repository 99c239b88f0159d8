import type { Json } from "../core/json.js";
import { currentReviews, keyId, type Review } from "../core/reviews.js";
import type { Attempt, Key, Score } from "../core/types.js";
import { GRADER_PASSED_KEY } from "./grader-mapping.js";

/** The skip reason of a `human` grader nobody reviewed yet (see run-grader.ts). */
export const HUMAN_REVIEW_PENDING = "human_review_pending";

/**
 * The outcomes with their reviews applied, for a ResultSet: a `human` grader's pending score
 * (`human_review_pending`) takes the current reviews of scorer `human:<grader id>`, else of
 * `human` (their reviewers' mean; `reason` their notes; `metadata.reviewers` who and when), and
 * `reviewsOf` gives each outcome's current reviews, written as `metadata.stet.reviews`. A
 * review of another attempt than the outcome is history and changes nothing here.
 *
 * @example const { outcomes, reviewsOf } = applyReviews(loaded.outcomes, await store.reviews.list(id));
 */
export function applyReviews<A extends Pick<Attempt, "sampleId" | "epoch" | "attempt" | "scores">>(
  outcomes: readonly A[],
  reviews: readonly Review[],
): { outcomes: A[]; reviewsOf: (attempt: Key) => Json[] | undefined } {
  const byKey = new Map(outcomes.map((o) => [keyId(o), o.attempt]));
  const current = new Map<string, Review[]>();
  for (const r of currentReviews(reviews, (k) => byKey.get(keyId(k))))
    current.set(keyId(r), [...(current.get(keyId(r)) ?? []), r]);
  const filled = outcomes.map((o) => {
    const mine = current.get(keyId(o));
    if (!mine) return o;
    return { ...o, scores: o.scores.map((s) => reviewed(s, mine)) };
  });
  return {
    outcomes: filled,
    reviewsOf: (a) =>
      current.get(keyId(a))?.map((r) => ({
        scorer: r.scorer,
        reviewer: r.reviewer,
        value: r.value,
        note: r.note,
        created_at: r.createdAt,
      })),
  };
}

function reviewed(score: Score, reviews: readonly Review[]): Score {
  if (score.value !== null || score.skipped !== HUMAN_REVIEW_PENDING) return score;
  const own = reviews.filter((r) => r.scorer === `human:${score.scorer}`);
  const taken = own.length > 0 ? own : reviews.filter((r) => r.scorer === "human");
  if (taken.length === 0) return score;
  const { skipped: _pending, ...rest } = score;
  const notes = taken.flatMap((r) => (r.note ? [`${r.reviewer}: ${r.note}`] : []));
  const value = taken.reduce((sum, r) => sum + r.value, 0) / taken.length;
  return {
    ...rest,
    value,
    ...(notes.length > 0 ? { explanation: notes.join("\n") } : {}),
    metadata: {
      ...score.metadata,
      // Pending, the grader had not passed; reviewed, it passes as any score does (≥ 1).
      [GRADER_PASSED_KEY]: value >= 1,
      reviewers: taken.map((r) => ({ reviewer: r.reviewer, reviewed_at: r.createdAt })),
    },
  };
}
