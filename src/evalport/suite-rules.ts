import { graderRuleErrors } from "./grader-rules.js";
import { type ValidationError, isObject, pointer } from "./validation-types.js";
import { versionErrors } from "./version-errors.js";

/** A test case and where it came from: a pointer into the suite, or a JSONL file and line. */
export interface LocatedTestCase {
  value: unknown;
  path: string;
  file?: string;
  line?: number;
}

/**
 * The suite rules JSON Schema cannot express: exactly one of `test_cases`/`test_cases_file`,
 * unique test case and grader ids (`DUPLICATE_ID`), grader references that resolve
 * (`DANGLING_REFERENCE`), the type-specific grader checks, and the version policy. Test cases
 * in a `test_cases_file` are checked by `validateFile`, which reads it.
 *
 * @example suiteRuleErrors({ version: "1.0.0", id: "s", test_cases: [{ id: "t", input: "x", graders: ["g"] }] })
 * // [{ path: "/test_cases/0/graders/0", code: "suite.dangling_grader_ref", ... }]
 */
export function suiteRuleErrors(suite: unknown): ValidationError[] {
  if (!isObject(suite)) return [];
  const errors = [...versionErrors(suite), ...sourceErrors(suite)];
  const graders = Array.isArray(suite.graders) ? suite.graders : [];
  graders.forEach((g, i) => errors.push(...graderRuleErrors(g, `/graders/${i}`)));
  errors.push(
    ...duplicateIdErrors(
      graders.map((value, i) => ({ value, path: `/graders/${i}` })),
      "grader",
    ),
  );
  if (Array.isArray(suite.test_cases)) {
    const cases = suite.test_cases.map((value, i) => ({ value, path: `/test_cases/${i}` }));
    errors.push(...testCaseSetErrors(cases, suiteGraderIds(suite)));
  }
  return errors;
}

/** The ids of a suite's shared graders, which test cases may reference. */
export function suiteGraderIds(suite: Record<string, unknown>): Set<string> {
  const graders = Array.isArray(suite.graders) ? suite.graders : [];
  return new Set(graders.filter(isObject).flatMap((g) => (typeof g.id === "string" ? [g.id] : [])));
}

/**
 * Rules over a set of test cases: unique ids, inline grader checks and, when `graderIds` is
 * given, that every string reference names one of them.
 *
 * @example testCaseSetErrors([{ value: { id: "a" }, path: "/test_cases/0" }, { value: { id: "a" }, path: "/test_cases/1" }])
 * // [{ path: "/test_cases/1/id", code: "suite.duplicate_test_case_id", ... }]
 */
export function testCaseSetErrors(
  cases: LocatedTestCase[],
  graderIds?: ReadonlySet<string>,
): ValidationError[] {
  const errors = duplicateIdErrors(cases, "test case");
  for (const tc of cases) {
    if (!isObject(tc.value) || !Array.isArray(tc.value.graders)) continue;
    const where = { ...(tc.file && { file: tc.file }), ...(tc.line && { line: tc.line }) };
    tc.value.graders.forEach((ref, j) => {
      const path = pointer(tc.path, "graders", j);
      if (isObject(ref))
        errors.push(...graderRuleErrors(ref, path).map((e) => ({ ...e, ...where })));
      if (typeof ref !== "string" || !graderIds || graderIds.has(ref)) return;
      errors.push({
        path,
        code: "suite.dangling_grader_ref",
        message: `grader "${ref}" is not defined in the suite's graders`,
        ...where,
      });
    });
  }
  return errors;
}

function duplicateIdErrors(
  items: LocatedTestCase[],
  what: "grader" | "test case",
): ValidationError[] {
  const first = new Map<string, LocatedTestCase>();
  const errors: ValidationError[] = [];
  for (const item of items) {
    const id = isObject(item.value) ? item.value.id : undefined;
    if (typeof id !== "string") continue;
    const earlier = first.get(id);
    if (!earlier) {
      first.set(id, item);
      continue;
    }
    const seenAt = earlier.line ? `line ${earlier.line}` : `${earlier.path}/id`;
    errors.push({
      path: pointer(item.path, "id"),
      code: what === "grader" ? "suite.duplicate_grader_id" : "suite.duplicate_test_case_id",
      message: `${what} id "${id}" is already used at ${seenAt}`,
      ...(item.file && { file: item.file }),
      ...(item.line && { line: item.line }),
    });
  }
  return errors;
}

function sourceErrors(suite: Record<string, unknown>): ValidationError[] {
  const inline = suite.test_cases !== undefined;
  const file = suite.test_cases_file !== undefined;
  if (inline && file) {
    return [
      {
        path: "/test_cases_file",
        code: "suite.test_cases_and_file",
        message: "a suite gives either test_cases or test_cases_file, not both",
      },
    ];
  }
  if (inline || file) return [];
  return [
    {
      path: "/test_cases",
      code: "schema.required",
      message: "must have required property 'test_cases' (or 'test_cases_file')",
    },
  ];
}
