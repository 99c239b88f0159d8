import * as z from "zod";
import { StetError } from "../core/errors.js";
import { jsonSchema } from "../core/json.js";
import { attemptErrorSchema, checkUsage, redactedSchema, retriesSchema } from "../core/schemas.js";
import type { Scoring, ScoringDraft } from "../core/types.js";
import type { ScoringFilter } from "./types/records.js";
import { invalidInput } from "./checks.js";
import { scoresSchema } from "./checks.js";
import { keyRangeParams, parseColumn, toUsage, usageDetailText } from "./rows.js";

/**
 * Scoring rows as both adapters select them, and the checks both apply before writing one:
 * the scorings layer (`scorings` table, migration 4) in one place.
 */

export const SCORING_COLUMNS = `sample_id, epoch, attempt, scoring, pass, status, scores, rescored,
  scorer_config, error, input_tokens, output_tokens, cost_usd, scored_at, duration_ms, redacted,
  retries, usage_detail`;

export interface ScoringRow {
  sample_id: string;
  epoch: number;
  attempt: number;
  scoring: number;
  pass: string;
  status: string;
  scores: string;
  rescored: string;
  scorer_config: string;
  error: string | null;
  input_tokens: number | null;
  output_tokens: number | null;
  cost_usd: number | null;
  scored_at: string;
  duration_ms: number;
  redacted: string | null;
  /** NULL on scorings stored before retries were counted. */
  retries: number | null;
  /** Cached, cache-write and reasoning tokens as JSON; NULL when none (and on older rows). */
  usage_detail: string | null;
}

const namesSchema = z.array(z.string());
const configSchema = z.record(z.string(), jsonSchema);

/**
 * Refuses drafts whose JSON could not be read back, as `checkDrafts` does for attempts, and a
 * scoring that says it scored while carrying an error (or the other way round).
 *
 * @example checkScoringDrafts(drafts); // throws E_INVALID_INPUT naming the attempt and field
 */
export function checkScoringDrafts(drafts: readonly ScoringDraft[]): void {
  for (const draft of drafts) {
    const what = `scoring of attempt ${draft.attempt} of sample "${draft.sampleId}" epoch ${draft.epoch}`;
    const checks = [
      ["scores", scoresSchema.safeParse(draft.scores)],
      ["rescored", namesSchema.safeParse(draft.rescored)],
      ["scorerConfig", configSchema.safeParse(draft.scorerConfig)],
      ["usage", draft.usage === null ? undefined : checkUsage(draft.usage)],
      ["error", draft.error === null ? undefined : attemptErrorSchema.safeParse(draft.error)],
      ["retries", draft.retries === undefined ? undefined : retriesSchema.safeParse(draft.retries)],
    ] as const;
    for (const [field, result] of checks) {
      if (result && !result.success) {
        throw invalidInput(`${what}: ${field}: ${z.prettifyError(result.error)}`);
      }
    }
    if ((draft.status === "error") !== (draft.error !== null) || !draft.pass) {
      throw invalidInput(`${what}: status ${draft.status} does not fit its error`);
    }
  }
}

/**
 * The refusal of a scoring whose attempt is not there, or has no output to score (its solver
 * failed: such a key is re-solved, not re-scored).
 */
export function unscorable(runId: string, draft: ScoringDraft, why: string): StetError {
  return invalidInput(
    `run ${runId}: attempt ${draft.attempt} of sample "${draft.sampleId}" epoch ${draft.epoch} ${why}; nothing of the batch was recorded`,
  );
}

/** Whether a stored attempt's solver succeeded: it has an output a scorer can score. */
export function hasOutput(row: { status: string; error: string | null }): boolean {
  if (row.status === "scored") return true;
  if (row.error === null) return false;
  return (JSON.parse(row.error) as { type?: string }).type === "scorer";
}

/** The parameters of both adapters' `listScorings` statement: the filter's, null when absent. */
export function scoringFilterParams(runId: string, filter: ScoringFilter = {}) {
  return { runId, ...keyRangeParams(filter), pass: filter.pass ?? null };
}

/** Named parameters of the scoring INSERT. */
export function scoringParams(runId: string, scoring: number, draft: ScoringDraft) {
  return {
    runId,
    sampleId: draft.sampleId,
    epoch: draft.epoch,
    attempt: draft.attempt,
    scoring,
    pass: draft.pass,
    status: draft.status,
    scores: JSON.stringify(draft.scores),
    rescored: JSON.stringify(draft.rescored),
    scorerConfig: JSON.stringify(draft.scorerConfig),
    error: draft.error === null ? null : JSON.stringify(draft.error),
    inputTokens: draft.usage?.inputTokens ?? null,
    outputTokens: draft.usage?.outputTokens ?? null,
    costUsd: draft.usage?.costUsd ?? null,
    scoredAt: draft.scoredAt,
    durationMs: draft.durationMs,
    redacted: draft.redacted === undefined ? null : JSON.stringify(draft.redacted),
    retries: draft.retries ?? null,
    usageDetail: usageDetailText(draft.usage),
  };
}

/** The stored scoring: the draft with its run and number. */
export function storedScoring(runId: string, scoring: number, draft: ScoringDraft): Scoring {
  return { ...draft, runId, scoring };
}

export function toScoring(runId: string, row: ScoringRow): Scoring {
  const what = (column: string) =>
    `${column} of scoring ${row.scoring} of attempt ${row.attempt} of ${runId}/${row.sample_id}#${row.epoch}`;
  if (row.status !== "scored" && row.status !== "error") {
    throw new StetError("E_STORE", `corrupt ${what("status")}: ${row.status}`);
  }
  const scoring: Scoring = {
    runId,
    sampleId: row.sample_id,
    epoch: row.epoch,
    attempt: row.attempt,
    scoring: row.scoring,
    pass: row.pass,
    status: row.status,
    scores: parseColumn(scoresSchema, row.scores, what("scores")),
    rescored: parseColumn(namesSchema, row.rescored, what("rescored")),
    scorerConfig: parseColumn(configSchema, row.scorer_config, what("scorer_config")),
    error: row.error === null ? null : parseColumn(attemptErrorSchema, row.error, what("error")),
    usage: toUsage(row.input_tokens, row.output_tokens, row.cost_usd, row.usage_detail, () =>
      what("usage_detail"),
    ),
    scoredAt: row.scored_at,
    durationMs: row.duration_ms,
  };
  if (row.redacted !== null) {
    scoring.redacted = parseColumn(redactedSchema, row.redacted, what("redacted"));
  }
  if (row.retries !== null) scoring.retries = row.retries;
  return scoring;
}
