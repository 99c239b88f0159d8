import { compareKeys, keyString } from "./keys.js";
import type { AttemptErrorType, AttemptStatus, Key } from "./types.js";

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
  const current = attempts.filter((a) => fingerprints.get(a.sampleId) === a.fingerprint);
  if (!sortedByKey(current)) return bestPerKey(current);
  // Store listings come in key order: the attempts of a key are adjacent, so one pass and no
  // map of 100,000 key strings is needed.
  const out: A[] = [];
  for (const attempt of current) {
    const held = out[out.length - 1];
    if (held && compareKeys(held, attempt) === 0) {
      if (rank(attempt) > rank(held)) out[out.length - 1] = attempt;
    } else out.push(attempt);
  }
  return out;
}

function bestPerKey<A extends Key & { status: AttemptStatus; attempt: number }>(
  attempts: readonly A[],
): A[] {
  const best = new Map<string, A>();
  for (const attempt of attempts) {
    const k = keyString(attempt);
    const held = best.get(k);
    if (!held || rank(attempt) > rank(held)) best.set(k, attempt);
  }
  return [...best.values()];
}

function sortedByKey(items: readonly Key[]): boolean {
  for (let i = 1; i < items.length; i++)
    if (compareKeys(items[i - 1]!, items[i]!) > 0) return false;
  return true;
}

function rank(a: { status: AttemptStatus; attempt: number }): number {
  return (a.status === "scored" ? 1e9 : 0) + a.attempt;
}

/**
 * Whether an outcome's scores count in the metrics: a scored attempt's, and a scorer error's,
 * whose output stands and whose scorers that did not throw scored it (the ones that threw have
 * a null value with an `error`, which no figure counts).
 *
 * @example scoresStand({ status: "error", error: { type: "scorer" } }) // true
 */
export function scoresStand(outcome: {
  status: AttemptStatus;
  error?: { type: AttemptErrorType } | null;
}): boolean {
  return outcome.status === "scored" || outcome.error?.type === "scorer";
}
