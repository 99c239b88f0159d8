import type { Json } from "../core/json.js";
import type { AttemptError, Score } from "../core/types.js";
import type { GraderResult } from "./result-set-types.js";
import { isObject } from "./validation-types.js";

/**
 * Score metadata keys a scorer may set for the export: the EvalPort grader type it implements
 * and whether it passed (its own threshold). The suite graders set both.
 */
export const GRADER_TYPE_KEY = "evalport.grader_type";
export const GRADER_PASSED_KEY = "evalport.passed";

/** EvalPort types of stet's built-in scorers, by their default names. */
const BUILT_IN_TYPES: Readonly<Record<string, string>> = {
  exact: "exact_match",
  includes: "contains",
  regex: "regex",
  model_graded: "llm_judge",
};

/**
 * The EvalPort grader type of a score: `metadata["evalport.grader_type"]` when the scorer set
 * it, else the type of a built-in scorer with that name (exact → exact_match, includes →
 * contains, regex → regex, model_graded → llm_judge), else `"custom"`.
 *
 * @example graderType("includes") // "contains"
 */
export function graderType(scorer: string, metadata?: Record<string, Json>): string {
  const declared = metadata?.[GRADER_TYPE_KEY];
  if (typeof declared === "string" && declared !== "") return declared;
  return BUILT_IN_TYPES[scorer] ?? "custom";
}

/**
 * Whether a score passed: never when null; `metadata["evalport.passed"]` when the scorer set
 * it; else `value >= 1`, the spec's default threshold (Rule 5) — so partial credit is not a pass.
 *
 * @example graderPassed({ scorer: "judge", value: 0.5 }) // false
 */
export function graderPassed(score: Pick<Score, "value" | "metadata">): boolean {
  if (score.value === null) return false;
  const declared = score.metadata?.[GRADER_PASSED_KEY];
  return typeof declared === "boolean" ? declared : score.value >= 1;
}

/**
 * One GraderResult per score: `grader_id` = scorer, `type` = `graderType`, `score` = value
 * (null when skipped, with `metadata.skip_reason`), `passed` = `graderPassed`, `reason` =
 * explanation, `metadata` = the score's metadata plus `stet.answer`. A score that is a scorer's
 * error is the spec's GRADER_ERROR (`score: null`, `skip_reason: "grader_error"`,
 * `metadata.error` = its message), marked `stet.scorer_error`. An attempt stored before scores
 * carried errors names the scorer that threw only in its `scorer` error: a null GraderResult
 * for it follows, the same GRADER_ERROR marked `stet.placeholder`. Keys `skip_reason` (on null
 * scores), `error` (on errors) and `stet` of score metadata are the mapping's.
 */
export function toGraderResults(
  scores: readonly Score[],
  error: AttemptError | null,
): GraderResult[] {
  const out = scores.map((score): GraderResult => {
    const metadata: Record<string, Json> = { ...score.metadata };
    const stet: Record<string, Json> = {};
    if (score.value === null) metadata.skip_reason = score.skipped ?? "unscored";
    if (score.answer !== undefined) stet.answer = score.answer;
    if (score.error !== undefined) {
      metadata.skip_reason = "grader_error";
      metadata.error = score.error;
      stet.scorer_error = true;
    }
    if (Object.keys(stet).length > 0) metadata.stet = stet;
    return {
      grader_id: score.scorer,
      type: graderType(score.scorer, score.metadata),
      score: score.value,
      passed: graderPassed(score),
      ...(score.explanation !== undefined && { reason: score.explanation }),
      ...(Object.keys(metadata).length > 0 && { metadata }),
    };
  });
  const named = error?.type === "scorer" ? error.scorer : undefined;
  if (
    error &&
    named !== undefined &&
    !scores.some((s) => s.scorer === named && s.error !== undefined)
  ) {
    out.push({
      grader_id: named,
      type: graderType(named),
      score: null,
      passed: false,
      metadata: { skip_reason: "grader_error", error: error.message, stet: { placeholder: true } },
    });
  }
  return out;
}

/**
 * The scores of GraderResults (the inverse of `toGraderResults`), and the scorer that threw
 * (the first `stet.scorer_error` one, or the placeholder's). For another tool's results
 * (`foreign`), the grader type and the pass flag are kept in the score's metadata, so that
 * exporting again reproduces them.
 */
export function fromGraderResults(
  graders: readonly GraderResult[],
  options: { foreign: boolean; failed: boolean },
): { scores: Score[]; failedScorer?: string } {
  let failedScorer: string | undefined;
  const scores: Score[] = [];
  for (const g of graders) {
    const { stet, skip_reason, ...metadata } = g.metadata ?? {};
    const note = isObject(stet) ? stet : undefined;
    if (options.failed && note?.placeholder === true) {
      if (skip_reason === "grader_error") failedScorer = g.grader_id;
      continue;
    }
    const thrown = note?.scorer_error === true ? metadata.error : undefined;
    if (typeof thrown === "string") {
      delete metadata.error;
      failedScorer ??= g.grader_id;
    }
    if (stet !== undefined && note === undefined) metadata.stet = stet;
    if (g.score !== null && skip_reason !== undefined) metadata.skip_reason = skip_reason;
    if (options.foreign) {
      metadata[GRADER_TYPE_KEY] ??= g.type;
      metadata[GRADER_PASSED_KEY] ??= g.passed;
    }
    const score: Score = { scorer: g.grader_id, value: g.score };
    if (typeof thrown === "string") score.error = thrown;
    else if (g.score === null)
      score.skipped = typeof skip_reason === "string" ? skip_reason : "unscored";
    if (typeof note?.answer === "string") score.answer = note.answer;
    if (g.reason !== undefined) score.explanation = g.reason;
    if (Object.keys(metadata).length > 0) score.metadata = metadata;
    scores.push(score);
  }
  return { scores, ...(failedScorer !== undefined && { failedScorer }) };
}
