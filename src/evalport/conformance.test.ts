import { readdirSync, readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import * as z from "zod";
import { validateDocument } from "./validate-document.js";

// The spec's conformance fixtures for landed features, vendored unchanged (and listed in the
// folder's README.md).
const FIXTURES = new URL("../../test/fixtures/evalport/conformance/", import.meta.url);

/** The fixtures of features that landed in the schema stet ships, by group. */
const IN_SCOPE_NAMES = [
  // core and resumable runs
  "partial_resultset_resumable_run",
  "null_score_not_scored_failure",
  "categorical_grader_invalid_category",
  "score_out_of_range_rejected",
  "boolean_score_rejected",
  "custom_grader_missing_handler_rejected",
  "non_standard_grader_type_with_handler_valid",
  "judge_hardening_self_report",
  "judge_identity_self_report",
  // attempts
  "multi_attempt_resultset_valid",
  "duplicate_attempt_collision_rejected",
  // types and formats
  "actual_output_list_rejected",
  "started_at_date_only_rejected",
  "result_completed_at_without_offset_rejected",
  "testcase_empty_string_input_rejected",
  "optional_fields_well_typed_valid",
  "null_score_passed_true_rejected",
  "all_null_scored_result_passed_rejected",
];
/**
 * Every suite_* and group_* fixture is in scope too. The fixtures of proposals that never landed
 * in the schema stet ships (constraint_violation_*, verdict_*, altb_*, ...) were not vendored.
 */
const IN_SCOPE_PATTERNS = [/^suite_/, /^group_/];

const fixtureSchema = z.object({
  description: z.string(),
  type: z.enum(["resultset", "suite", "testcase", "grader"]),
  mode: z.string().optional(),
  expect: z.object({ valid: z.boolean(), error_paths: z.array(z.string()).optional() }),
  document: z.unknown(),
});

const names = readdirSync(FIXTURES)
  .filter((file) => file.endsWith(".json"))
  .map((file) => file.slice(0, -".json".length))
  .sort();
const inScope = names.filter(
  (n) => IN_SCOPE_NAMES.includes(n) || IN_SCOPE_PATTERNS.some((p) => p.test(n)),
);

function loadFixture(name: string) {
  return fixtureSchema.parse(JSON.parse(readFileSync(new URL(`${name}.json`, FIXTURES), "utf8")));
}

/** The fixtures write `$.results[0].grader_results[1].score`; stet reports JSON Pointers. */
function jsonPathToPointer(path: string): string {
  const segments = path.replace(/^\$/, "").match(/\.[^.[\]]+|\[\d+\]|\['[^']*'\]/g) ?? [];
  return segments
    .map((s) => (s.startsWith(".") ? s.slice(1) : s.slice(1, -1).replace(/^'|'$/g, "")))
    .map((s) => `/${s.replaceAll("~", "~0").replaceAll("/", "~1")}`)
    .join("");
}

describe("EvalPort conformance fixtures", () => {
  it("holds exactly the in-scope fixtures", () => {
    expect(names.filter((n) => !inScope.includes(n))).toEqual([]);
    for (const n of IN_SCOPE_NAMES) expect(names).toContain(n);
    for (const p of IN_SCOPE_PATTERNS) expect(names.some((n) => p.test(n))).toBe(true);
  });

  it.each(inScope)("%s", (name) => {
    const fixture = loadFixture(name);
    const result = validateDocument(fixture.document, fixture.type);
    // On a mismatch, the errors are the useful part of the failure message.
    expect({ valid: result.valid, errors: result.errors }).toMatchObject({
      valid: fixture.expect.valid,
    });
    const reported = result.errors.map((e) => e.path);
    for (const expected of fixture.expect.error_paths ?? []) {
      expect(reported).toContain(jsonPathToPointer(expected));
    }
    // Auto-detection agrees with the fixture's declared type.
    expect(validateDocument(fixture.document).kind).toBe(fixture.type);
  });
});

describe("jsonPathToPointer", () => {
  it.each([
    ["$.started_at", "/started_at"],
    ["$.results[0].grader_results[1].score", "/results/0/grader_results/1/score"],
    ["$.metadata['openeval.partial']", "/metadata/openeval.partial"],
    ["$", ""],
  ])("%s → %s", (path, expected) => expect(jsonPathToPointer(path)).toBe(expected));
});
