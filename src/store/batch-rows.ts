import * as z from "zod";
import { StetError } from "../core/errors.js";
import { parseColumn } from "./rows.js";
import type { BatchSubmission, SubmissionStatus } from "./types.js";

/**
 * Batch submission rows (`batch_submissions`, SQLite migration 15, PostgreSQL 14) as both
 * adapters write and read them, and the SQL they share (both compile `@name` parameters).
 */
export const BATCH_SQL = {
  record: `INSERT INTO batch_submissions
    (nonce, run_id, provider, endpoint, keys, batch_id, status, note, created_at, updated_at)
    VALUES (@nonce, @runId, @provider, @endpoint, @keys, NULL, 'recorded', NULL, @createdAt, @createdAt)`,
  update: `UPDATE batch_submissions SET batch_id = COALESCE(@batchId, batch_id), status = @status,
    note = COALESCE(@note, note), updated_at = @at WHERE nonce = @nonce`,
  list: `SELECT nonce, run_id, provider, endpoint, keys, batch_id, status, note, created_at,
    updated_at FROM batch_submissions WHERE run_id = @runId ORDER BY created_at, nonce`,
} as const;

export interface BatchRow {
  nonce: string;
  run_id: string;
  provider: string;
  endpoint: string;
  keys: string;
  batch_id: string | null;
  status: string;
  note: string | null;
  created_at: string;
  updated_at: string;
}

const keysSchema = z.array(
  z.object({
    sampleId: z.string(),
    epoch: z.number().int(),
    customId: z.string(),
    request: z.string(),
  }),
);

const statusSchema = z.enum(["recorded", "submitted", "ended", "failed", "cancelled", "abandoned"]);

/** A new submission's parameters. */
export function recordParams(
  s: Omit<BatchSubmission, "batchId" | "status" | "note" | "updatedAt">,
): Record<string, string> {
  const { nonce, runId, provider, endpoint, createdAt } = s;
  return { nonce, runId, provider, endpoint, keys: JSON.stringify(s.keys), createdAt };
}

/** An update's parameters (absent fields stay as they are). */
export function updateParams(
  nonce: string,
  change: { batchId?: string; status: SubmissionStatus; note?: string },
  at: string,
): Record<string, string | null> {
  return {
    nonce,
    batchId: change.batchId ?? null,
    status: change.status,
    note: change.note ?? null,
    at,
  };
}

/** A row read back, its keys parsed (never cast). */
export function toSubmission(row: BatchRow): BatchSubmission {
  const what = `batch submission ${row.nonce}`;
  const status = statusSchema.safeParse(row.status);
  if (!status.success) throw new StetError("E_STORE", `corrupt status of ${what}: ${row.status}`);
  return {
    nonce: row.nonce,
    runId: row.run_id,
    provider: row.provider,
    endpoint: row.endpoint,
    keys: parseColumn(keysSchema, row.keys, `keys of ${what}`),
    batchId: row.batch_id,
    status: status.data,
    note: row.note,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}
