import { keyId } from "../core/reviews.js";
import type { Key } from "../core/types.js";
import type { Store } from "../store/types.js";

/** What reviews of some keys need to know of the run: its samples among theirs, their outcomes. */
export interface ReviewedOutcomes {
  /** The sample ids named that the run's snapshot has. */
  samples: ReadonlySet<string>;
  /** Per key (`keyId`) named that has an outcome, the outcome's attempt number. */
  attempts: ReadonlyMap<string, number>;
}

/**
 * The current outcome of each key named (its latest scored attempt of the sample's snapshot
 * fingerprint, else its latest error: `selectOutcomes`' rule, `reads.listOutcomes`' too), read
 * one sample named at a time: what recording or listing reviews needs, without reading every
 * sample and attempt of a run of millions of keys for a handful of reviews.
 *
 * @example const { samples, attempts } = await reviewedOutcomes(store, "r_abc", [{ sampleId: "q1", epoch: 1 }]);
 */
export async function reviewedOutcomes(
  store: Store,
  runId: string,
  keys: Iterable<Key>,
): Promise<ReviewedOutcomes> {
  const samples = new Set<string>();
  const attempts = new Map<string, number>();
  for (const sampleId of new Set([...keys].map((k) => k.sampleId))) {
    const { total, entries } = await store.reads.listOutcomes(runId, { sampleId });
    if (total > 0) samples.add(sampleId);
    for (const entry of entries) {
      if (entry.outcome) attempts.set(keyId(entry), entry.outcome.attempt);
    }
  }
  return { samples, attempts };
}
