import * as z from "zod";
import { jsonSchema } from "../core/json.js";
import {
  attemptErrorSchema,
  provenanceSchema,
  redactedSchema,
  retriesSchema,
  scoreSchema,
  usageSchema,
} from "../core/schemas.js";
import type { AttemptDraft } from "../core/types.js";
import { attemptLimitSchema } from "../core/limits.js";

/** An RFC 3339 timestamp with an offset, as the engine writes them (`toISOString`). */
const timestamp = z.iso.datetime({ offset: true });

/**
 * One line of the engine's fallback file (`<run>.fallback.jsonl`; `engine/fallback-file.ts` says
 * where it goes): an attempt the store could not commit, as `{ runId, ...AttemptDraft }`.
 */
export const fallbackLineSchema = z.strictObject({
  runId: z.string().min(1),
  sampleId: z.string().min(1),
  epoch: z.number().int().positive(),
  status: z.enum(["scored", "error"]),
  output: jsonSchema,
  scores: z.array(scoreSchema),
  usage: usageSchema.nullable(),
  transcript: jsonSchema,
  error: attemptErrorSchema.nullable(),
  startedAt: timestamp,
  completedAt: timestamp,
  durationMs: z.number().nonnegative(),
  fingerprint: z.string().min(1),
  provenance: provenanceSchema,
  redacted: redactedSchema.optional(),
  retries: retriesSchema.optional(),
  /** The per-sample limit that ended the attempt (AttemptDraft). */
  limit: attemptLimitSchema.optional(),
  /** A re-run on request (`stet resume --rerun`): the attempt it follows (AttemptDraft). */
  rerunAfter: z.number().int().nonnegative().optional(),
});

export type FallbackLine = AttemptDraft & { runId: string };

/**
 * True when a parsed JSONL line looks like a fallback line rather than an EvalPort Result: it
 * has the engine's `runId` and `sampleId` where a Result has `test_case_id`.
 *
 * @example isFallbackLine({ runId: "r_1", sampleId: "q1", epoch: 1 }) // true
 */
export function isFallbackLine(value: unknown): boolean {
  return (
    typeof value === "object" &&
    value !== null &&
    "runId" in value &&
    "sampleId" in value &&
    !("test_case_id" in value)
  );
}
