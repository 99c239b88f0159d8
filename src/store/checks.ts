import * as z from "zod";
import { StetError } from "../core/errors.js";
import { isJson } from "../core/json.js";
import { checkLabels } from "../core/labels.js";
import {
  attemptErrorSchema,
  checkUsage,
  retriesSchema,
  runConfigSchema,
  scoreSchema,
} from "../core/schemas.js";
import type { AttemptDraft, SampleRecord } from "../core/types.js";
import type { NewRun } from "./types.js";

/**
 * Checks and errors every Store adapter shares, so that SQLite and PostgreSQL refuse the same
 * input with the same codes and messages.
 */

export const scoresSchema = z.array(scoreSchema);

/**
 * Refuses a run whose config or labels could not be read back. A snapshot that repeats a sample
 * id is refused by the store's key as the snapshot is written, and only then are the ids looked
 * through to name it: a set of every id held 20 MB (and twice that while it grew) while a
 * 1,000,000-sample run was created.
 *
 * @example checkNewRun({ id, config, samples, owner }); // throws E_INVALID_INPUT
 */
export function checkNewRun({ config, labels }: NewRun): void {
  checkRunConfig(config);
  if (labels !== undefined) {
    try {
      checkLabels(labels, `labels of run ${config.evalName}`);
    } catch (error) {
      throw invalidInput(error instanceof Error ? error.message : String(error));
    }
  }
}

/**
 * Refuses a replacement config that could not be read back.
 *
 * @example checkRunConfig(config); // throws E_INVALID_INPUT naming the field
 */
export function checkRunConfig(config: unknown): void {
  const parsed = runConfigSchema.safeParse(config);
  if (!parsed.success) throw invalidInput(`run config: ${z.prettifyError(parsed.error)}`);
}

/**
 * Refuses an update or snapshot that names one sample twice.
 *
 * @example checkUniqueSampleIds(records); // throws E_DUPLICATE_ID naming the id
 */
export function checkUniqueSampleIds(records: readonly SampleRecord[]): void {
  const seen = new Set<string>();
  for (const { sample } of records) {
    if (seen.has(sample.id)) {
      throw new StetError("E_DUPLICATE_ID", `two samples have the id "${sample.id}"`);
    }
    seen.add(sample.id);
  }
}

/**
 * Refuses drafts whose JSON could not be read back (a NaN score, a negative token count): one
 * unreadable row would make the whole run unreadable. Scores come from user code.
 *
 * @example checkDrafts(drafts); // throws E_INVALID_INPUT naming the key and the field
 */
export function checkDrafts(drafts: AttemptDraft[]): void {
  for (const draft of drafts) {
    const after = draft.rerunAfter;
    if (after !== undefined && !(Number.isInteger(after) && after >= 0)) {
      throw invalidInput(
        `attempt for sample "${draft.sampleId}" epoch ${draft.epoch}: rerunAfter must be a non-negative integer, got ${after}`,
      );
    }
    // Scores and retries checked by hand first (every attempt is checked here); zod decides and
    // words anything that is not plainly right.
    const checks = [
      ["scores", arePlainScores(draft.scores) ? undefined : scoresSchema.safeParse(draft.scores)],
      ["usage", draft.usage === null ? undefined : checkUsage(draft.usage)],
      ["error", draft.error === null ? undefined : attemptErrorSchema.safeParse(draft.error)],
      [
        "retries",
        draft.retries === undefined || isCount(draft.retries)
          ? undefined
          : retriesSchema.safeParse(draft.retries),
      ],
    ] as const;
    for (const [field, result] of checks) {
      if (result && !result.success) {
        throw invalidInput(
          `attempt for sample "${draft.sampleId}" epoch ${draft.epoch}: ${field}: ${z.prettifyError(result.error)}`,
        );
      }
    }
  }
}

const isCount = (value: unknown): boolean => Number.isSafeInteger(value) && (value as number) >= 0;
const isOptionalText = (value: unknown): boolean =>
  value === undefined || typeof value === "string";
const SCORE_TEXTS = ["skipped", "error", "answer", "explanation"] as const;

/**
 * Whether `scores` is a list `scoresSchema` accepts, checked without zod: true only where the
 * schema's parse succeeds; false leaves it to the schema.
 *
 * @example arePlainScores([{ scorer: "exact", value: 1 }]) // true
 */
export function arePlainScores(scores: unknown): boolean {
  if (!Array.isArray(scores)) return false;
  for (const score of scores as unknown[]) {
    if (typeof score !== "object" || score === null || Array.isArray(score)) return false;
    const s = score as Record<string, unknown>;
    if (typeof s.scorer !== "string") return false;
    const v = s.value;
    if (v !== null && !(typeof v === "number" && v >= 0 && v <= 1)) return false;
    for (const field of SCORE_TEXTS) if (!isOptionalText(s[field])) return false;
    const metadata = s.metadata;
    if (metadata === undefined) continue;
    if (typeof metadata !== "object" || metadata === null || Array.isArray(metadata)) return false;
    if (Object.getPrototypeOf(metadata) !== Object.prototype || !isJson(metadata)) return false;
    // The schema checks each member as JSON, where undefined is not (isJson skips it).
    for (const key in metadata)
      if ((metadata as Record<string, unknown>)[key] === undefined) return false;
  }
  return true;
}

export function invalidInput(message: string): StetError {
  return new StetError("E_INVALID_INPUT", message);
}

export function runExists(runId: string): StetError {
  return invalidInput(`a run with id "${runId}" already exists`);
}

export function runNotFound(runId: string): StetError {
  return new StetError("E_RUN_NOT_FOUND", `no run with id "${runId}"`, { details: { runId } });
}

export function fenced(runId: string): StetError {
  return new StetError(
    "E_FENCED",
    `run ${runId} has another owner now; this process lost it and its write was rejected`,
    { details: { runId } },
  );
}

export function alreadyScored(runId: string, sampleId: string, epoch: number): StetError {
  return new StetError(
    "E_ALREADY_SCORED",
    `run ${runId}: sample "${sampleId}" epoch ${epoch} already has a scored attempt; nothing of the batch was recorded`,
    { details: { runId, sampleId, epoch } },
  );
}

export function notInSnapshot(runId: string, sampleId: string): StetError {
  return invalidInput(`sample "${sampleId}" is not in the snapshot of run ${runId}`);
}

export function illegalRelease(runId: string): StetError {
  return new StetError("E_ILLEGAL_TRANSITION", `releasing run ${runId} cannot leave it running`);
}
