import type { AttemptDraft } from "../core/types.js";
import { jsonText, usageDetailText } from "./rows.js";

/** The attempts columns an INSERT fills, in the order of `attemptValues`. */
export const ATTEMPT_INSERT_COLUMNS = [
  "run_id",
  "sample_id",
  "epoch",
  "attempt",
  "status",
  "fingerprint",
  "output",
  "scores",
  "input_tokens",
  "output_tokens",
  "cost_usd",
  "usage_detail",
  "transcript",
  "error",
  "started_at",
  "completed_at",
  "duration_ms",
  "provenance_kind",
  "provenance_source",
  "redacted",
  "retries",
  "limit_hit",
] as const;

/**
 * An attempt's values for the INSERT, in the order of ATTEMPT_INSERT_COLUMNS: SQLite binds them
 * by position (an array, not an object of names, as every attempt goes through it), PostgreSQL
 * names each column's array (`unnest`). JSON null transcripts are stored as SQL NULL.
 */
export function attemptValues(runId: string, attempt: number, draft: AttemptDraft): unknown[] {
  return [
    runId,
    draft.sampleId,
    draft.epoch,
    attempt,
    draft.status,
    draft.fingerprint,
    jsonText(draft.output),
    JSON.stringify(draft.scores),
    draft.usage?.inputTokens ?? null,
    draft.usage?.outputTokens ?? null,
    draft.usage?.costUsd ?? null,
    usageDetailText(draft.usage),
    draft.transcript === null || draft.transcript === undefined ? null : jsonText(draft.transcript),
    draft.error === null ? null : JSON.stringify(draft.error),
    draft.startedAt,
    draft.completedAt,
    draft.durationMs,
    draft.provenance.kind,
    draft.provenance.kind === "imported" ? draft.provenance.source : null,
    draft.redacted === undefined ? null : JSON.stringify(draft.redacted),
    draft.retries ?? null,
    draft.limit === undefined ? null : JSON.stringify(draft.limit),
  ];
}
