import { isOpenBatch, type BatchClient } from "../core/batch.js";
import { clientOfSubmission } from "../eval/batch-clients.js";
import type { BatchSubmission, Store } from "../store/types.js";

/** What cancelling a run's waiting batches did. */
export interface BatchCancels {
  /** Batches cancelled at the provider now (their finished requests stay there for a resume). */
  cancelled: number;
  /** Batches that had ended already: a resume collects them. */
  ended: number;
  /** Batches left as they were, each with why (the provider refused, or it could not be found). */
  left: { batch: string; reason: string }[];
}

/**
 * Cancels at the provider the batches of a run that no process executes (`stet cancel` on a run
 * left waiting by `--detach`, or whose owner died): each open submission's batch (found by its
 * nonce when its id was never recorded) is looked at and, while running, cancelled, and recorded
 * `cancelled`. What finished inside it is kept: the submission stays adoptable, so a resume
 * downloads those results and commits them without buying them again; a request that never ran
 * is its key's error there, which a later resume executes again. A batch that ended already is
 * left for the resume to collect. Undefined when the run has no open submission.
 *
 * @example const cancels = await cancelWaitingBatches(store, "r_abc"); cancels?.cancelled;
 */
export async function cancelWaitingBatches(
  store: Store,
  runId: string,
  clientOf: (submission: BatchSubmission) => BatchClient = clientOfSubmission,
): Promise<BatchCancels | undefined> {
  const open = (await store.batches.list(runId)).filter((s) => isOpenBatch(s.status));
  if (open.length === 0) return undefined;
  const result: BatchCancels = { cancelled: 0, ended: 0, left: [] };
  for (const submission of open) {
    const name = submission.batchId ?? `(nonce ${submission.nonce})`;
    try {
      const outcome = await cancelOne(store, submission, clientOf(submission));
      if (typeof outcome === "string") result.left.push({ batch: name, reason: outcome });
      else result[outcome.ended ? "ended" : "cancelled"]++;
    } catch (error) {
      const reason = error instanceof Error ? error.message : String(error);
      result.left.push({ batch: name, reason });
    }
  }
  return result;
}

/** One submission's batch cancelled (or found ended); a string says why it was left alone. */
async function cancelOne(
  store: Store,
  submission: BatchSubmission,
  client: BatchClient,
): Promise<{ ended: boolean } | string> {
  let batchId = submission.batchId;
  if (batchId === null) {
    const found = await client.find(submission.nonce, submission.createdAt);
    if (found === "pending") {
      return "its id was never recorded and the provider shows its custom ids only once it ends";
    }
    if (found === undefined) return "the provider has no batch with its nonce (never created)";
    batchId = found;
  }
  const look = await client.look(batchId);
  if (look.status !== "running") return { ended: true };
  await client.cancel(batchId);
  const at = new Date().toISOString();
  const note = `cancelled by stet cancel at ${at}; what finished in it is collected by a resume`;
  await store.batches.update(submission.nonce, { batchId, status: "cancelled", note }, at);
  return { ended: false };
}
