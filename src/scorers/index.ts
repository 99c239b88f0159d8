import { code } from "./code.js";
import { custom } from "./custom.js";
import { exact } from "./exact.js";
import { includes } from "./includes.js";
import { jsonMatch } from "./json-match.js";
import { modelGraded } from "./model-graded.js";
import { numeric } from "./numeric.js";
import { regex } from "./regex.js";
import { toolCallF1, toolSequence, toolUsed, turns } from "./trajectory.js";

/** The built-in scorers. A named function `({ sample, output, ctx }) => score` is a scorer too. */
export const scorers = {
  exact,
  includes,
  regex,
  numeric,
  jsonMatch,
  modelGraded,
  custom,
  code,
  toolUsed,
  toolSequence,
  toolCallF1,
  turns,
};

export { code, custom, exact, includes, jsonMatch, modelGraded, numeric, regex };
export { toolCallF1, toolSequence, toolUsed, turns };
export type { ExpectedToolCall, ToolSequenceMode, ToolSequenceOptions } from "./trajectory.js";
export type { CodeOptions } from "./code.js";
export type { ExactOptions } from "./exact.js";
export type { IncludesOptions } from "./includes.js";
export type { JsonMatchOptions } from "./json-match.js";
export type { ModelGradedOptions } from "./model-graded.js";
export type { NumericOptions } from "./numeric.js";
export { ScorerError } from "./scorer-error.js";
export { DEFAULT_RUBRIC, DEFAULT_TEMPLATE, parseGrade } from "./model-graded.js";
export { extractNumber } from "./numeric.js";
export { isSubset, parseJson } from "./json-match.js";
export { normalizeScore } from "../core/normalize.js";
export { toScorer } from "./normalize.js";
