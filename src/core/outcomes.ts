import { keyString } from "./keys.js";
import type { AttemptStatus, Key } from "./types.js";

/**
 * The current outcome of each key: its latest scored attempt for the sample's current
 * fingerprint, else its latest error for that fingerprint. Attempts for an old fingerprint
 * (the sample changed) are history, not outcomes.
 *
 * @example selectOutcomes(attempts, new Map([["q1", fp]])) // one attempt per key
 */
export function selectOutcomes<
  A extends Key & { status: AttemptStatus; attempt: number; fingerprint: string },
>(attempts: readonly A[], fingerprints: ReadonlyMap<string, string>): A[] {
  const best = new Map<string, A>();
  for (const attempt of attempts) {
    if (fingerprints.get(attempt.sampleId) !== attempt.fingerprint) continue;
    const k = keyString(attempt);
    const held = best.get(k);
    if (!held || rank(attempt) > rank(held)) best.set(k, attempt);
  }
  return [...best.values()];
}

function rank(a: { status: AttemptStatus; attempt: number }): number {
  return (a.status === "scored" ? 1e9 : 0) + a.attempt;
}
