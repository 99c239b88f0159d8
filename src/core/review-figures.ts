import { agreement, type Agreement } from "./agreement.js";
import { meanAndStderr, reduceEpochs, type ScorerMetrics } from "./aggregate.js";
import { currentReviews, keyId, reviewValues, type Review } from "./reviews.js";
import type { KeyFigures } from "./run-figures.js";
import type { Key, Reducer, Score } from "./types.js";

/** What reviews add to a run's figures: each human scorer's metrics, and its agreement. */
export interface ReviewFigures {
  metrics: ScorerMetrics[];
  agreement: Agreement[];
}

/** A key's outcome as the figures need it: which attempt it is, and its judged scores. */
export type ReviewedOutcome = Key & { attempt: number; scores: readonly Score[] };

/**
 * The human scorers' figures, a pure function of the stored reviews and the keys' outcomes: a
 * review counts while it is its reviewer's latest for the key and scorer and names the key's
 * outcome attempt. A key's human value is the mean of its reviewers' values; a sample's is its
 * epochs reduced by the run's reducer, as for any scorer. Agreement pairs each human scorer with
 * every scorer of `scorers` over the keys both scored.
 *
 * @example reviewFigures(reviews, outcomes, ["exact"], "mean").metrics[0].scorer // "human"
 */
export function reviewFigures(
  reviews: readonly Review[],
  outcomes: readonly ReviewedOutcome[],
  scorers: readonly string[],
  reducer: Reducer,
): ReviewFigures {
  const byKey = new Map(outcomes.map((o) => [keyId(o), o]));
  const current = currentReviews(reviews, (key) => byKey.get(keyId(key))?.attempt);
  const values = reviewValues(current);
  const metrics: ScorerMetrics[] = [];
  const agreements: Agreement[] = [];
  for (const [human, byHumanKey] of values) {
    const perSample = new Map<string, number[]>();
    for (const [id, value] of byHumanKey) {
      const sampleId = byKey.get(id)!.sampleId;
      perSample.set(sampleId, [...(perSample.get(sampleId) ?? []), value]);
    }
    const reduced = [...perSample.values()].map((v) => reduceEpochs(v, reducer));
    metrics.push({ scorer: human, ...meanAndStderr(reduced), samples: reduced.length });
    for (const scorer of scorers) {
      const pairs: [number, number][] = [];
      for (const [id, value] of byHumanKey) {
        const judged = byKey.get(id)!.scores.find((s) => s.scorer === scorer)?.value;
        if (typeof judged === "number") pairs.push([value, judged]);
      }
      agreements.push(agreement(human, scorer, pairs));
    }
  }
  return { metrics, agreement: agreements };
}

/**
 * The keys the reviews name, each once, in the order first reviewed: the keys whose outcomes
 * `reviewFigures` reads.
 *
 * @example reviewedKeys(reviews); // [{ sampleId: "s1", epoch: 1 }]
 */
export function reviewedKeys(reviews: readonly Review[]): Key[] {
  const keys = new Map<string, Key>();
  for (const { sampleId, epoch } of reviews)
    keys.set(keyId({ sampleId, epoch }), { sampleId, epoch });
  return [...keys.values()];
}

/**
 * The reviewed keys' outcomes as `reviewFigures` reads them, from the figures the store keeps of
 * them (`readFigures`' keys, in the same order): the outcome's attempt and the scores that count
 * (a key with no outcome has none, so no review of it counts).
 *
 * @example reviewedOutcomes(keys, (await store.reads.readFigures(id, reducer, keys)).keys);
 */
export function reviewedOutcomes(
  keys: readonly Key[],
  figures: readonly (KeyFigures | undefined)[],
): ReviewedOutcome[] {
  const outcomes: ReviewedOutcome[] = [];
  keys.forEach((key, i) => {
    const outcome = figures[i];
    if (!outcome) return;
    const scores = (outcome.values ?? []).map(([scorer, value]) => ({ scorer, value }));
    outcomes.push({ ...key, attempt: outcome.attempt, scores });
  });
  return outcomes;
}
