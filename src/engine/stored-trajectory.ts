import type { JournalKeep } from "../core/eval.js";
import { trajectoryOf, type Trajectory } from "../core/trajectory.js";
import type { Key, Usage } from "../core/types.js";
import type { Store } from "../store/types.js";

/** Why an attempt of an eval with `journal: false` has no trajectory. */
export const NOT_JOURNALED =
  "the eval journals nothing (journal: false): the attempt's trajectory was never recorded";

/** A stored attempt whose trajectory a scoring reads. */
export interface StoredAttemptRef {
  key: Key;
  attempt: number;
  /** The attempt's usage: tokens say it made model calls, which its journal would hold. */
  usage?: Usage | null;
  /** Whether the attempt ended in error (a scorer error): `keep: "failed"` keeps its journal. */
  failed?: boolean;
}

/** How the eval journals, which tells an attempt that made no step from one whose journal went. */
export interface StoredTrajectoryOptions {
  store: Pick<Store, "journal">;
  runId: string;
  /** `solver.journal !== false`. */
  journaled: boolean;
  /** The eval's retention (`journal: { keep }`). */
  keep?: JournalKeep | undefined;
}

/**
 * The trajectory of a stored attempt (a rescore's, a resume's scorer error's), from its journal
 * entries in the store: one indexed read. Unknown when the eval journals nothing, or when the
 * attempt has no entries and they were pruned: the eval's retention deletes a scored attempt's
 * journal (`keep: "open"`, or `"failed"` for an attempt that did not fail), or the attempt paid
 * for model calls that its journal no longer holds (`--prune-journal`). Scoring an empty
 * trajectory there would score what the attempt did as nothing.
 *
 * @example const trajectory = await storedTrajectory({ store, runId, journaled: true }, unit);
 */
export async function storedTrajectory(
  options: StoredTrajectoryOptions,
  ref: StoredAttemptRef,
): Promise<Trajectory> {
  if (!options.journaled) return { known: false, reason: NOT_JOURNALED };
  const { sampleId, epoch } = ref.key;
  const entries = await options.store.journal.list(options.runId, {
    sampleId,
    epoch,
    attempt: ref.attempt,
  });
  if (entries.length > 0) return trajectoryOf(entries);
  const where = `sample ${sampleId} epoch ${epoch} attempt ${ref.attempt}`;
  const { keep } = options;
  if (keep === "open" || (keep === "failed" && ref.failed !== true)) {
    return {
      known: false,
      reason: `the journal of ${where} was pruned (journal: { keep: "${keep}" }): its trajectory is gone`,
    };
  }
  const tokens = (ref.usage?.inputTokens ?? 0) + (ref.usage?.outputTokens ?? 0);
  if (tokens > 0) {
    return {
      known: false,
      reason: `the journal of ${where} was pruned (--prune-journal): it made model calls its journal no longer holds`,
    };
  }
  return trajectoryOf([]);
}
