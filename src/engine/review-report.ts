import { selectOutcomes } from "../core/outcomes.js";
import { reviewFigures, type ReviewFigures } from "../core/review-figures.js";
import type { Run, SampleRecord } from "../core/types.js";
import type { AttemptHead, Store } from "../store/types.js";

/**
 * The run's human scorers' figures from its stored reviews and its keys' outcomes, or undefined
 * when nobody reviewed it (then the run's attempts are not read again).
 *
 * @example const figures = await storedReviewFigures(store, run, samples);
 */
export async function storedReviewFigures(
  store: Store,
  run: Run,
  samples: readonly SampleRecord[] | undefined,
  heads?: readonly AttemptHead[],
): Promise<ReviewFigures | undefined> {
  const reviews = await store.reviews.list(run.id);
  if (reviews.length === 0) return undefined;
  if (!samples) {
    // The reviewed samples only: their fingerprints and attempts, nothing of the rest.
    const read = await store.reads.sampleHeads(
      run.id,
      reviews.map((r) => r.sampleId),
    );
    const fingerprints = new Map(read.fingerprints.map((f) => [f.sampleId, f.fingerprint]));
    const outcomes = selectOutcomes(read.heads, fingerprints);
    return reviewFigures(reviews, outcomes, run.config.scorers, run.config.reducer);
  }
  const fingerprints = new Map(samples.map((r) => [r.sample.id, r.fingerprint]));
  const outcomes = selectOutcomes(
    heads ?? (await store.reads.listAttemptHeads(run.id)),
    fingerprints,
  );
  return reviewFigures(reviews, outcomes, run.config.scorers, run.config.reducer);
}
