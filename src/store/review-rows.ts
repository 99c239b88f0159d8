import { StetError } from "../core/errors.js";
import { REVIEW_LIMITS, REVIEW_SCORER, type Review, type ReviewDraft } from "../core/reviews.js";
import type { ReviewFilter } from "./types/records.js";

/**
 * Review rows (`reviews`, SQLite migration 12, PostgreSQL 11) as both adapters write and read
 * them, the SQL they share (both compile `@name` parameters), and the checks applied before a
 * batch is written.
 */
export const REVIEW_SQL = {
  insert: `INSERT INTO reviews (run_id, sample_id, epoch, attempt, scorer, reviewer, value, note,
      created_at)
    VALUES (@runId, @sampleId, @epoch, @attempt, @scorer, @reviewer, @value, @note, @createdAt)
    RETURNING seq`,
  attemptExists: `SELECT 1 AS found FROM attempts
    WHERE run_id = @runId AND sample_id = @sampleId AND epoch = @epoch AND attempt = @attempt`,
  list: `SELECT seq, run_id, sample_id, epoch, attempt, scorer, reviewer, value, note, created_at
    FROM reviews WHERE run_id = @runId
      AND (CAST(@fromSampleId AS TEXT) IS NULL OR sample_id >= CAST(@fromSampleId AS TEXT))
      AND (CAST(@toSampleId AS TEXT) IS NULL OR sample_id <= CAST(@toSampleId AS TEXT))
    ORDER BY seq LIMIT CAST(@limit AS INTEGER)`,
} as const;

export interface ReviewRow {
  seq: number | string;
  run_id: string;
  sample_id: string;
  epoch: number;
  attempt: number;
  scorer: string;
  reviewer: string;
  value: number;
  note: string | null;
  created_at: string;
}

/** `REVIEW_SQL.list`'s parameters: the run, the filter's sample-id range and its count. */
export function reviewListParams(runId: string, filter: ReviewFilter = {}) {
  return {
    runId,
    fromSampleId: filter.fromSampleId ?? null,
    toSampleId: filter.toSampleId ?? null,
    // No limit is the largest INTEGER: SQLite refuses a NULL LIMIT, PostgreSQL a negative one.
    limit: filter.limit ?? 2_147_483_647,
  };
}

/** A draft's parameters for `REVIEW_SQL.insert`. */
export function reviewParams(
  runId: string,
  d: ReviewDraft,
): Record<string, string | number | null> {
  return {
    runId,
    sampleId: d.sampleId,
    epoch: d.epoch,
    attempt: d.attempt,
    scorer: d.scorer,
    reviewer: d.reviewer,
    value: d.value,
    note: d.note,
    createdAt: d.createdAt,
  };
}

/** A row read back (PostgreSQL's BIGSERIAL comes back as text). */
export function toReview(row: ReviewRow): Review {
  return {
    runId: row.run_id,
    seq: Number(row.seq),
    sampleId: row.sample_id,
    epoch: Number(row.epoch),
    attempt: Number(row.attempt),
    scorer: row.scorer,
    reviewer: row.reviewer,
    value: Number(row.value),
    note: row.note,
    createdAt: row.created_at,
  };
}

/** What the store refuses whatever the caller checked: a review it could not read back whole. */
export function checkReviewDrafts(drafts: readonly ReviewDraft[]): void {
  for (const d of drafts) {
    const why = !REVIEW_SCORER.test(d.scorer)
      ? `scorer "${d.scorer}" is not human or human:<rubric>`
      : d.reviewer.length === 0 || d.reviewer.length > REVIEW_LIMITS.reviewer
        ? `reviewer must be 1 to ${REVIEW_LIMITS.reviewer} characters`
        : !Number.isFinite(d.value)
          ? "value must be a finite number"
          : d.note !== null && d.note.length > REVIEW_LIMITS.note
            ? `note is longer than ${REVIEW_LIMITS.note} characters`
            : undefined;
    if (why)
      throw new StetError("E_INVALID_INPUT", `review of ${d.sampleId} epoch ${d.epoch}: ${why}`);
  }
}

/** The attempt a review names is not stored. */
export function unreviewable(runId: string, d: ReviewDraft): StetError {
  return new StetError(
    "E_INVALID_INPUT",
    `run ${runId} has no attempt ${d.attempt} of sample ${d.sampleId} epoch ${d.epoch} to review`,
  );
}
