import { isOpenBatch, summarizeBatches } from "../../core/batch.js";
import type { BatchSubmission } from "../../store/types.js";

/** Submissions still open at the provider (or not yet found there): what a resume collects. */
export function openBatches(submissions: readonly BatchSubmission[]): BatchSubmission[] {
  return submissions.filter((s) => isOpenBatch(s.status));
}

/**
 * A run's provider batches as `stet show --json` gives them, as listings do (never a key: the
 * endpoint is redacted).
 */
export function batchesView(submissions: readonly BatchSubmission[], now: number) {
  return summarizeBatches(submissions, now)?.batches ?? [];
}

/**
 * The lines `stet show` prints about a run's provider batches: how many it is waiting on, and
 * each open one's id, provider, requests and age. Empty for a run that never batched.
 *
 * @example describeBatches(submissions, Date.now()) // "batches  waiting on 1 of 2\n  batch_1 · openai · 20 requests · submitted 3m ago"
 */
export function describeBatches(submissions: readonly BatchSubmission[], now: number): string {
  if (submissions.length === 0) return "";
  const open = openBatches(submissions);
  const lines = [`batches  waiting on ${open.length} of ${submissions.length}`];
  for (const s of open) {
    const age = Math.max(0, Math.round((now - Date.parse(s.createdAt)) / 60_000));
    lines.push(
      `  ${s.batchId ?? `(nonce ${s.nonce}, id not yet known)`} · ${s.provider} · ${s.keys.length} requests · ${s.status} ${age}m ago`,
    );
  }
  return lines.join("\n");
}
