import type { Key } from "./types.js";

/**
 * A person's scoring of one attempt: who (`reviewer`), under which scorer name (`human` or
 * `human:<rubric>`), the value (pass 1, fail 0, or a score), a note, and when. Reviews are kept
 * apart from attempts and judged scorings: a review never changes what was paid for.
 */
export interface ReviewDraft extends Key {
  /** The attempt reviewed: the key's current attempt when the review was made. */
  attempt: number;
  scorer: string;
  reviewer: string;
  value: number;
  note: string | null;
  createdAt: string;
}

/** A stored review: its draft and its place in the store's order (later supersedes earlier). */
export interface Review extends ReviewDraft {
  runId: string;
  seq: number;
}

/** A review scorer's name: `human`, or `human:` and a rubric. */
export const REVIEW_SCORER = /^human(:[A-Za-z0-9_.-]{1,64})?$/;

/** Longest reviewer name and note a review may carry. */
export const REVIEW_LIMITS = { reviewer: 128, note: 4000 } as const;

/**
 * The reviews that count for metrics: per key, scorer and reviewer the latest one (by `seq`),
 * and only those of the attempt that is the key's current one (`currentAttempt`). A review of an
 * attempt a later execution replaced stays in history and counts no more.
 *
 * @example currentReviews(all, (k) => heads.get(`${k.sampleId}#${k.epoch}`))
 */
export function currentReviews(
  reviews: readonly Review[],
  currentAttempt: (key: Key) => number | undefined,
): Review[] {
  const latest = new Map<string, Review>();
  for (const review of reviews) {
    const id = JSON.stringify([review.sampleId, review.epoch, review.scorer, review.reviewer]);
    const seen = latest.get(id);
    if (!seen || seen.seq < review.seq) latest.set(id, review);
  }
  return [...latest.values()]
    .filter((r) => currentAttempt(r) === r.attempt)
    .sort((a, b) => a.seq - b.seq);
}

/**
 * Per scorer, each reviewed key's value: the mean of its reviewers' current values (one reviewer:
 * that reviewer's value).
 */
export function reviewValues(current: readonly Review[]): Map<string, Map<string, number>> {
  const sums = new Map<string, Map<string, { total: number; count: number }>>();
  for (const review of current) {
    const byKey = sums.get(review.scorer) ?? new Map<string, { total: number; count: number }>();
    sums.set(review.scorer, byKey);
    const id = keyId(review);
    const entry = byKey.get(id) ?? { total: 0, count: 0 };
    entry.total += review.value;
    entry.count += 1;
    byKey.set(id, entry);
  }
  const values = new Map<string, Map<string, number>>();
  for (const [scorer, byKey] of [...sums].sort(([a], [b]) => (a < b ? -1 : 1))) {
    const out = new Map<string, number>();
    for (const [id, { total, count }] of byKey) out.set(id, total / count);
    values.set(scorer, out);
  }
  return values;
}

/** A key as one string: what review values and agreement pair keys by. */
export function keyId(key: Key): string {
  return JSON.stringify([key.sampleId, key.epoch]);
}
