import { partialFlagErrors } from "./is-partial.js";
import { type ValidationError, isObject, pointer } from "./validation-types.js";
import { versionErrors } from "./version-errors.js";

/**
 * The ResultSet rules JSON Schema cannot express (SPEC "Validation Rules" 3 and 6, the group
 * and partial-run conventions). Assumes nothing about the document's shape: parts that are
 * malformed are the schema's to report and are skipped here.
 *
 * @example resultSetRuleErrors({ run_id: "r", results: [{ test_case_id: "a", attempt: 1 },
 *   { test_case_id: "a", attempt: 1 }] }) // [{ path: "/results/1/attempt", code: "result.duplicate_attempt", ... }]
 */
export function resultSetRuleErrors(doc: unknown): ValidationError[] {
  if (!isObject(doc)) return [];
  const errors = [...versionErrors(doc), ...partialFlagErrors(doc), ...groupErrors(doc.group)];
  if (!Array.isArray(doc.results)) return errors;
  doc.results.forEach((result, i) => errors.push(...resultRuleErrors(result, `/results/${i}`)));
  errors.push(...duplicateAttemptErrors(doc.results, doc.run_id));
  return errors;
}

/**
 * Rules on one Result: a null score is "not verified", so it cannot have `passed: true`, and a
 * Result whose graders are all null-scored has no basis for `passed: true` (SPEC Rule 6).
 *
 * @example resultRuleErrors({ passed: true, grader_results: [{ score: null, passed: false }] }, "")
 * // [{ path: "/passed", code: "result.all_null_passed", ... }]
 */
export function resultRuleErrors(result: unknown, path: string): ValidationError[] {
  if (!isObject(result) || !Array.isArray(result.grader_results)) return [];
  const graders = result.grader_results.filter(isObject);
  const errors: ValidationError[] = [];
  result.grader_results.forEach((gr, j) => {
    if (isObject(gr) && gr.score === null && gr.passed === true) {
      errors.push({
        path: pointer(path, "grader_results", j, "passed"),
        code: "result.null_score_passed",
        message: `grader "${String(gr.grader_id)}" has score null (not verified) and so cannot have passed: true`,
      });
    }
  });
  const allNull = graders.length > 0 && graders.every((gr) => gr.score === null);
  if (allNull && result.passed === true) {
    errors.push({
      path: pointer(path, "passed"),
      code: "result.all_null_passed",
      message:
        "every grader result has score null (unscored), so the result cannot have passed: true",
    });
  }
  return errors;
}

/** `(test_case_id, run_id, attempt)` is unique wherever `attempt` is present (SPEC Rule 3). */
function duplicateAttemptErrors(results: unknown[], runId: unknown): ValidationError[] {
  const firstIndex = new Map<string, number>();
  const errors: ValidationError[] = [];
  results.forEach((result, i) => {
    if (!isObject(result) || typeof result.test_case_id !== "string") return;
    if (!Number.isInteger(result.attempt)) return;
    const key = JSON.stringify([result.test_case_id, result.attempt]);
    const first = firstIndex.get(key);
    if (first === undefined) {
      firstIndex.set(key, i);
      return;
    }
    errors.push({
      path: `/results/${i}/attempt`,
      code: "result.duplicate_attempt",
      message: `test case "${result.test_case_id}" attempt ${String(result.attempt)} already appears at /results/${first} (run ${JSON.stringify(runId)})`,
    });
  });
  return errors;
}

function groupErrors(group: unknown): ValidationError[] {
  if (!isObject(group) || typeof group.group_id !== "string") return [];
  if (group.parent_group_id !== group.group_id) return [];
  return [
    {
      path: "/group/parent_group_id",
      code: "group.self_parent",
      message: `group "${group.group_id}" cannot be its own parent`,
    },
  ];
}
