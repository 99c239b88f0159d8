import type { BatchClient, BatchLine, BatchOptions, BatchResult } from "../core/batch.js";
import type { RunEvent } from "../core/events.js";
import type { BatchSubmission, Store } from "../store/types.js";

/** What the batches of an execution tell its shell (`RunEvent` of type `batch`). */
export type BatchEvents = (event: Extract<RunEvent, { type: "batch" }>) => void;

export interface CollectParts {
  store: Store;
  submission: BatchSubmission;
  client: BatchClient;
  /** The requests of a submission just recorded: its batch is created. Absent: adopted. */
  lines?: readonly BatchLine[] | undefined;
  settings: Required<BatchOptions>;
  abort: AbortSignal;
  events?: BatchEvents | undefined;
  /** The batches running at the provider, by nonce, while this one runs (what a cancel cancels). */
  open: Map<string, { client: BatchClient; batchId: string }>;
  /**
   * Called each time a look finds the batch running at the provider (its id recorded): its keys
   * wait on the provider alone. A batch found ended is collected first.
   */
  running?: () => void;
}

/**
 * A recorded submission to its results. Without a batch id, it is created (`lines`) or, recorded
 * by an earlier execution, found by its nonce at the provider: a kill between the record and the
 * id lost nothing but the id. A batch the provider never created is `abandoned` (no results:
 * its keys go in a new batch). Then it is looked at every `pollSeconds` until it ends, and its
 * results downloaded; each step is recorded as it happens. A batch that failed as a whole gives
 * every key its reason as an error.
 */
export async function collectBatch(parts: CollectParts): Promise<Map<string, BatchResult>> {
  const { store, submission, client, lines, settings, abort } = parts;
  const { nonce } = submission;
  const at = () => new Date().toISOString();
  const emit = parts.events ?? (() => {});
  const requests = submission.keys.length;
  let batchId = submission.batchId;
  if (batchId === null) {
    let found: string | "pending" | undefined;
    if (lines) found = await client.create(nonce, lines, settings.window);
    else {
      found = await client.find(nonce, submission.createdAt);
      // A batch that may be this one has not ended (Anthropic shows custom ids only in results).
      while (found === "pending") {
        await sleep(settings.pollSeconds * 1000, abort);
        found = await client.find(nonce, submission.createdAt);
      }
    }
    if (found === undefined) {
      const note = "the provider has no batch with this submission's nonce: it was never created";
      await store.batches.update(nonce, { status: "abandoned", note }, at());
      emit({ type: "batch", phase: "abandoned", nonce, requests });
      return new Map();
    }
    batchId = found;
    await store.batches.update(nonce, { batchId, status: "submitted" }, at());
  }
  emit({ type: "batch", phase: lines ? "submitted" : "adopted", nonce, batchId, requests });
  parts.open.set(nonce, { client, batchId });
  try {
    return await untilEnded(parts, batchId);
  } finally {
    parts.open.delete(nonce);
  }
}

/** Looks at a batch until it ends; its results (or, failed as a whole, its reason for each key). */
async function untilEnded(parts: CollectParts, batchId: string): Promise<Map<string, BatchResult>> {
  const { store, submission, client, settings, abort } = parts;
  const { nonce } = submission;
  const at = () => new Date().toISOString();
  const emit = parts.events ?? (() => {});
  const requests = submission.keys.length;
  for (;;) {
    const look = await client.look(batchId);
    if (look.status === "failed") {
      await store.batches.update(nonce, { status: "failed", note: look.reason }, at());
      emit({ type: "batch", phase: "failed", nonce, batchId, requests, note: look.reason });
      const error: BatchResult = { kind: "errored", message: look.reason };
      return new Map(submission.keys.map((k) => [k.customId, error]));
    }
    if (look.status === "ended") break;
    // Still running at the provider: what waits on it may be left to a later resume (--detach).
    parts.running?.();
    await sleep(settings.pollSeconds * 1000, abort);
  }
  const results = await client.results(batchId);
  await store.batches.update(nonce, { status: "ended" }, at());
  emit({ type: "batch", phase: "ended", nonce, batchId, requests });
  return results;
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason as Error);
    const timer = setTimeout(() => {
      signal.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal.reason as Error);
    };
    signal.addEventListener("abort", onAbort, { once: true });
  });
}
