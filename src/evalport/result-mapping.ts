import * as z from "zod";
import { StetError } from "../core/errors.js";
import { canonicalJson, jsonSchema, type Json } from "../core/json.js";
import { attemptLimitSchema } from "../core/limits.js";
import { provenanceSchema, redactedSchema, retriesSchema } from "../core/schemas.js";
import type {
  Attempt,
  AttemptDraft,
  AttemptError,
  AttemptErrorType,
  Provenance,
  Usage,
  UsageFigures,
} from "../core/types.js";
import { fromGraderResults, toGraderResults } from "./grader-mapping.js";
import { parseJson } from "./parse-json.js";
import type { EvalPortError, EvalPortErrorType, EvalPortResult } from "./result-set-types.js";
import { rfc3339 } from "./timestamps.js";
import { isObject } from "./validation-types.js";
import { trajectoryUsage } from "../core/usage.js";

/** What `toResult` needs to know about the run. */
export interface ResultContext {
  /** The run's epochs: `attempt` is written when greater than 1. */
  epochs: number;
  /** The attempt's step journal (its trajectory), written as `metadata.stet.journal`. */
  journal?: (attempt: Attempt) => Json[] | undefined;
  /** The outcome's current reviews (people's scores), written as `metadata.stet.reviews`. */
  reviews?: (attempt: Attempt) => Json[] | undefined;
}

/** Skip reason of a suite grader a test case does not reference; such scores are not exported. */
export const NOT_REFERENCED = "not_referenced";

/**
 * The EvalPort Result for one stored attempt: THE mapping between stet attempts and EvalPort
 * Results, used by export, the `--output` stream, merge and (with `fromResult`) import.
 *
 * | Result                        | from the attempt                                                |
 * |-------------------------------|-----------------------------------------------------------------|
 * | `test_case_id`                | `sampleId`                                                      |
 * | `attempt`                     | `epoch`, written only when the run has more than one epoch      |
 * | `actual_output`               | the output if a string; other JSON as canonical JSON (sorted    |
 * |                               | keys); `""` when there is none (a failed solver)                |
 * | `grader_results`              | one per score, see `toGraderResults` (grader-mapping.ts)        |
 * | `passed`                      | status scored, at least one non-null score, and every non-null  |
 * |                               | grader passed (SPEC Rule 6 / aggregation `all`)                 |
 * | `duration_ms`                 | `durationMs` (integer ≥ 0)                                      |
 * | `completed_at`                | `completedAt`, RFC 3339 with offset (always set)                |
 * | `error`                       | error attempts: `{ type, message, retryable, code? }` with      |
 * |                               | timeout→timeout, provider→provider_error, solver and            |
 * |                               | scorer→runner_error; retryable for timeout and provider;        |
 * |                               | `code` = the HTTP status                                        |
 * | `metadata.openeval.cost`      | `usage` as `{ input_tokens, output_tokens, estimated_cost_usd }`;|
 * |                               | `estimated_cost_usd` is null when no price was known (unknown,  |
 * |                               | not 0); no `cost` for an attempt without usage                  |
 * | `metadata.openeval.aggregation_status` | `"unscored"` when no grader produced a score           |
 * | `metadata.stet`               | `{ run_id, attempt (the stored attempt number), fingerprint,    |
 * |                               | provenance, started_at, output_format?, transcript?, journal?,  |
 * |                               | not_referenced?, redacted?, retries?, limit? }`; `journal` is the       |
 * |                               | attempt's step journal (ctx.step / ctx.chat), not read back by  |
 * |                               | import; `retries` its re-sent model requests, absent when       |
 * |                               | unknown (an attempt stored before stet counted them); `limit`   |
 * |                               | the per-sample limit that ended it `{ limit, value, used }`;     |
 * |                               | `reviews` its current reviews `{ scorer, reviewer, value, note,  |
 * |                               | created_at }` (not read back by import)                          |
 *
 * `output_format` is `"json"` when `actual_output` is the canonical JSON of a non-string
 * output and `"none"` when the output was null; `not_referenced` names the suite graders the
 * test case did not use (their null scores are left out of `grader_results`). With these,
 * `fromResult(toResult(a))` gives back every field of the attempt (object key order aside).
 *
 * @example
 * toResult(attempt, { epochs: 1 })
 * // { test_case_id: "q1", actual_output: "4", passed: true, grader_results: [{ grader_id: "exact",
 * //   type: "exact_match", score: 1, passed: true }], duration_ms: 12, completed_at: "…Z", metadata: {…} }
 */
export function toResult(attempt: Attempt, ctx: ResultContext): EvalPortResult {
  const exported = attempt.scores.filter(
    (s) => !(s.value === null && s.skipped === NOT_REFERENCED),
  );
  const notReferenced = attempt.scores.filter((s) => !exported.includes(s)).map((s) => s.scorer);
  const graders = toGraderResults(exported, attempt.error);
  const scored = graders.filter((g) => g.score !== null);
  const output = encodeOutput(attempt.output);
  const journal = ctx.journal?.(attempt);
  const reviews = ctx.reviews?.(attempt);
  const openeval: Record<string, Json> = {};
  if (attempt.usage) openeval.cost = cost(trajectoryUsage(attempt.usage));
  if (scored.length === 0) openeval.aggregation_status = "unscored";
  const stet: Record<string, Json> = {
    run_id: attempt.runId,
    attempt: attempt.attempt,
    fingerprint: attempt.fingerprint,
    provenance: { ...attempt.provenance },
    started_at: attempt.startedAt,
    ...(output.format && { output_format: output.format }),
    ...(attempt.transcript !== null && { transcript: attempt.transcript }),
    ...(journal && { journal }),
    ...(reviews && { reviews }),
    ...(notReferenced.length > 0 && { not_referenced: notReferenced }),
    ...(attempt.redacted !== undefined && { redacted: [...attempt.redacted] }),
    ...(attempt.retries !== undefined && { retries: attempt.retries }),
    ...(attempt.limit !== undefined && { limit: { ...attempt.limit } }),
  };
  const failed = attempt.status === "error";
  return {
    test_case_id: attempt.sampleId,
    ...((ctx.epochs > 1 || attempt.epoch > 1) && { attempt: attempt.epoch }),
    actual_output: output.text,
    passed: !failed && scored.length > 0 && scored.every((g) => g.passed),
    grader_results: graders,
    duration_ms: Math.max(0, Math.round(attempt.durationMs)),
    completed_at: rfc3339(attempt.completedAt),
    ...(failed && { error: toError(attempt.error) }),
    metadata: { ...(Object.keys(openeval).length > 0 && { openeval }), stet },
  };
}

/** What `fromResult` gives: an AttemptDraft's fields, with what only stet results carry optional. */
export interface ResultAttempt extends Omit<AttemptDraft, "fingerprint" | "provenance"> {
  /** The sample fingerprint the attempt executed (stet-produced results only). */
  fingerprint?: string;
  provenance?: Provenance;
  /** The producing run and the attempt number its store gave (stet-produced results only). */
  runId?: string;
  storedAttempt?: number;
}

export interface FromResultOptions {
  /** The run's scorer names: restored scores are put in this order. */
  scorers?: readonly string[];
  /** `completedAt` for a Result without `completed_at` (default: the Unix epoch). */
  fallbackTime?: string;
}

/**
 * The attempt fields of an EvalPort Result (the inverse of `toResult`). A Result without
 * `metadata.stet` (another tool's) is read tolerantly: no fingerprint, usage from
 * `metadata.openeval.cost` (or the dotted key `"openeval.cost"`), grader types and pass flags
 * kept in score metadata. Throws `E_INVALID_INPUT` when `metadata.stet` is malformed.
 *
 * @example
 * const { sampleId, epoch, scores, fingerprint } = fromResult(line, { scorers: run.config.scorers });
 */
export function fromResult(result: EvalPortResult, options: FromResultOptions = {}): ResultAttempt {
  const note = stetNote(result);
  const failed = result.error !== undefined;
  const graders = fromGraderResults(result.grader_results, {
    foreign: note === undefined,
    failed,
  });
  const scores = [
    ...graders.scores,
    ...(note?.not_referenced ?? []).map((scorer) => ({
      scorer,
      value: null,
      skipped: NOT_REFERENCED,
    })),
  ];
  const order = options.scorers;
  if (order) scores.sort((a, b) => rank(order, a.scorer) - rank(order, b.scorer));
  const completedAt = result.completed_at ?? options.fallbackTime ?? new Date(0).toISOString();
  const durationMs = result.duration_ms ?? 0;
  return {
    sampleId: result.test_case_id,
    epoch: result.attempt ?? 1,
    status: failed ? "error" : "scored",
    output: decodeOutput(result, note?.output_format),
    scores,
    usage: usageOf(result.metadata),
    transcript: note?.transcript ?? null,
    error: failed ? fromError(result.error!, graders.failedScorer) : null,
    startedAt: note?.started_at ?? minus(completedAt, durationMs),
    completedAt,
    durationMs,
    ...(note?.fingerprint !== undefined && { fingerprint: note.fingerprint }),
    ...(note?.provenance !== undefined && { provenance: note.provenance }),
    ...(note?.run_id !== undefined && { runId: note.run_id }),
    ...(note?.attempt !== undefined && { storedAttempt: note.attempt }),
    ...(note?.redacted !== undefined && { redacted: note.redacted }),
    ...(note?.retries !== undefined && { retries: note.retries }),
    ...(note?.limit !== undefined && { limit: note.limit }),
  };
}

const ERROR_TYPES: Record<AttemptErrorType, EvalPortErrorType> = {
  timeout: "timeout",
  provider: "provider_error",
  solver: "runner_error",
  scorer: "runner_error",
};

function toError(error: AttemptError | null): EvalPortError {
  const e = error ?? { type: "solver", message: "unknown error" };
  return {
    type: ERROR_TYPES[e.type],
    message: e.message,
    ...(e.status !== undefined && { code: e.status }),
    retryable: e.type === "timeout" || e.type === "provider",
  };
}

function fromError(error: EvalPortError, failedScorer: string | undefined): AttemptError {
  const type: AttemptErrorType =
    error.type === "timeout"
      ? "timeout"
      : error.type === "provider_error"
        ? "provider"
        : failedScorer === undefined
          ? "solver"
          : "scorer";
  return {
    type,
    message: error.message ?? "",
    ...(typeof error.code === "number" && Number.isInteger(error.code) && { status: error.code }),
    ...(type === "scorer" && { scorer: failedScorer! }),
  };
}

function encodeOutput(output: Json): { text: string; format?: "json" | "none" } {
  if (typeof output === "string") return { text: output };
  if (output === null) return { text: "", format: "none" };
  return { text: canonicalJson(output), format: "json" };
}

function decodeOutput(result: EvalPortResult, format: "json" | "none" | undefined): Json {
  if (format === "none") return null;
  if (format === undefined) return result.actual_output ?? null;
  const parsed = parseJson(result.actual_output ?? "");
  if (!parsed.ok) {
    throw new StetError(
      "E_INVALID_INPUT",
      `result "${result.test_case_id}": metadata.stet.output_format is "json" but actual_output is not JSON (${parsed.message})`,
    );
  }
  return parsed.value as Json;
}

function cost(usage: Usage): Json {
  return {
    ...costFigures(usage),
    ...(usage.reused !== undefined && { reused: costFigures(usage.reused) }),
  };
}

/** Token figures as `openeval.cost` says them; the cached, write and reasoning tiers when known. */
function costFigures(usage: UsageFigures): Record<string, Json> {
  return {
    input_tokens: usage.inputTokens,
    output_tokens: usage.outputTokens,
    ...(usage.cachedInputTokens !== undefined && { cached_input_tokens: usage.cachedInputTokens }),
    ...(usage.cacheWriteTokens !== undefined && { cache_write_tokens: usage.cacheWriteTokens }),
    ...(usage.reasoningTokens !== undefined && { reasoning_tokens: usage.reasoningTokens }),
    // Unknown is said as unknown: a reader summing the costs must not take it for $0.
    estimated_cost_usd: usage.costUsd ?? null,
  };
}

const costFiguresSchema = z.object({
  input_tokens: z.number().nonnegative().optional(),
  output_tokens: z.number().nonnegative().optional(),
  cached_input_tokens: z.number().nonnegative().optional(),
  cache_write_tokens: z.number().nonnegative().optional(),
  reasoning_tokens: z.number().nonnegative().optional(),
  estimated_cost_usd: z.number().nonnegative().nullable().optional(),
});

const costSchema = costFiguresSchema.extend({ reused: costFiguresSchema.optional() });

function usageOf(metadata: Record<string, Json> | undefined): Usage | null {
  const nested = isObject(metadata?.openeval) ? metadata.openeval.cost : undefined;
  const parsed = costSchema.safeParse(nested ?? metadata?.["openeval.cost"]);
  if (!parsed.success) return null;
  const { input_tokens, output_tokens, estimated_cost_usd, reused } = parsed.data;
  if (input_tokens === undefined && output_tokens === undefined && estimated_cost_usd == null) {
    return null;
  }
  const usage: Usage = figuresOf(parsed.data);
  if (reused !== undefined) usage.reused = figuresOf(reused);
  return usage;
}

/** A null cost is an unknown one: the usage has tokens and no `costUsd`. */
function figuresOf(cost: z.infer<typeof costFiguresSchema>): UsageFigures {
  const usage: UsageFigures = {
    inputTokens: cost.input_tokens ?? 0,
    outputTokens: cost.output_tokens ?? 0,
  };
  if (cost.cached_input_tokens !== undefined) usage.cachedInputTokens = cost.cached_input_tokens;
  if (cost.cache_write_tokens !== undefined) usage.cacheWriteTokens = cost.cache_write_tokens;
  if (cost.reasoning_tokens !== undefined) usage.reasoningTokens = cost.reasoning_tokens;
  if (cost.estimated_cost_usd != null) usage.costUsd = cost.estimated_cost_usd;
  return usage;
}

const stetNoteSchema = z.object({
  run_id: z.string().optional(),
  attempt: z.number().int().positive().optional(),
  fingerprint: z.string().optional(),
  provenance: provenanceSchema.optional(),
  started_at: z.string().optional(),
  output_format: z.enum(["json", "none"]).optional(),
  transcript: jsonSchema.optional(),
  not_referenced: z.array(z.string()).optional(),
  redacted: redactedSchema.optional(),
  retries: retriesSchema.optional(),
  limit: attemptLimitSchema.optional(),
});

function stetNote(result: EvalPortResult): z.infer<typeof stetNoteSchema> | undefined {
  const raw = result.metadata?.stet;
  if (raw === undefined) return undefined;
  const parsed = stetNoteSchema.safeParse(raw);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0];
  const where = ["metadata", "stet", ...(issue?.path ?? [])].join(".");
  throw new StetError(
    "E_INVALID_INPUT",
    `result "${result.test_case_id}": ${where}: ${issue?.message ?? "malformed"}`,
  );
}

function rank(order: readonly string[], scorer: string): number {
  const i = order.indexOf(scorer);
  return i === -1 ? order.length : i;
}

function minus(time: string, ms: number): string {
  const t = Date.parse(time);
  return Number.isNaN(t) ? time : new Date(t - ms).toISOString();
}
