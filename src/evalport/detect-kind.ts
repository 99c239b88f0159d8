import { type DocumentKind, isObject } from "./validation-types.js";

/**
 * Tells an EvalPort document's kind from its shape: `results` → ResultSet; `test_cases` or
 * `test_cases_file` → suite; `test_case_id` → a single Result (a Results JSONL line); `input`,
 * or `id` with `graders` → test case; `id` with `type` → grader. `undefined` when none fits.
 *
 * @example detectKind({ version: "1.0.0", id: "s", test_cases: [] }) // "suite"
 */
export function detectKind(doc: unknown): DocumentKind | undefined {
  if (!isObject(doc)) return undefined;
  if ("results" in doc) return "resultset";
  if ("test_cases" in doc || "test_cases_file" in doc) return "suite";
  if ("test_case_id" in doc) return "result";
  if ("input" in doc || ("id" in doc && "graders" in doc)) return "testcase";
  if ("id" in doc && "type" in doc) return "grader";
  return undefined;
}
