import { detectKind } from "./detect-kind.js";
import { graderRuleErrors } from "./grader-rules.js";
import { resultRuleErrors, resultSetRuleErrors } from "./resultset-rules.js";
import { schemaErrors } from "./schema-validators.js";
import { suiteRuleErrors, testCaseSetErrors } from "./suite-rules.js";
import type { DocumentKind, ValidationError, ValidationResult } from "./validation-types.js";

/**
 * Validates an EvalPort document: the spec's JSON Schema (draft 2020-12, RFC 3339 date-times)
 * plus the cross-field rules the schema cannot express. Never throws for bad input; every
 * problem is an error with a JSON Pointer `path` and a stable `code`. With `"auto"` (the
 * default) the kind is told from the document's shape (see `detectKind`).
 *
 * @example
 * const { valid, errors } = validateDocument(JSON.parse(text), "resultset");
 * // errors: [{ path: "/results/0/grader_results/0/score", code: "schema.maximum", message: "must be <= 1, got 1.5" }]
 */
export function validateDocument(
  doc: unknown,
  kind: DocumentKind | "auto" = "auto",
): ValidationResult {
  const resolved = kind === "auto" ? detectKind(doc) : kind;
  if (resolved === undefined) {
    return { valid: false, kind: undefined, errors: [unknownKindError()] };
  }
  const errors = [...schemaErrors(resolved, doc), ...ruleErrors(resolved, doc)];
  return { valid: errors.length === 0, kind: resolved, errors };
}

function ruleErrors(kind: DocumentKind, doc: unknown): ValidationError[] {
  switch (kind) {
    case "resultset":
      return resultSetRuleErrors(doc);
    case "result":
      return resultRuleErrors(doc, "");
    case "suite":
      return suiteRuleErrors(doc);
    case "testcase":
      return testCaseSetErrors([{ value: doc, path: "" }]);
    case "grader":
      return graderRuleErrors(doc, "");
  }
}

function unknownKindError(): ValidationError {
  return {
    path: "",
    code: "kind.unknown",
    message:
      "not an EvalPort document: expected a ResultSet (with results), a suite (with test_cases " +
      "or test_cases_file), a test case (id, input, graders), a Result (test_case_id) or a grader (id, type)",
  };
}
