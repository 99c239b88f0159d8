import { describe, expect, it } from "vitest";
import { validateDocument } from "./validate-document.js";

const gr = (score: number | null, passed: boolean, id = "g1") => ({
  grader_id: id,
  type: "exact_match",
  score,
  passed,
});
const result = (over: Record<string, unknown> = {}) => ({
  test_case_id: "tc_1",
  passed: true,
  grader_results: [gr(1, true)],
  ...over,
});
const resultSet = (results: unknown[], over: Record<string, unknown> = {}) => ({
  version: "1.0.0",
  suite_id: "s",
  run_id: "run_1",
  started_at: "2026-01-15T10:30:00Z",
  results,
  ...over,
});
const suite = (over: Record<string, unknown> = {}) => ({
  version: "1.0.0",
  id: "s",
  graders: [{ id: "g1", type: "exact_match" }],
  test_cases: [{ id: "tc_1", input: "hi", graders: ["g1"] }],
  ...over,
});

/** [name, document, expected errors (path and code), or [] for valid]. */
const cases: Array<[string, unknown, Array<{ path: string; code: string }>]> = [
  ["a minimal ResultSet", resultSet([result()]), []],
  [
    "duplicate (test_case_id, attempt)",
    resultSet([result({ attempt: 2 }), result({ attempt: 1 }), result({ attempt: 2 })]),
    [{ path: "/results/2/attempt", code: "result.duplicate_attempt" }],
  ],
  [
    "the same attempt number on different test cases",
    resultSet([result({ attempt: 1 }), result({ test_case_id: "tc_2", attempt: 1 })]),
    [],
  ],
  ["repeated test_case_id without attempt (rule is a no-op)", resultSet([result(), result()]), []],
  [
    "null score with passed: true",
    resultSet([result({ grader_results: [gr(1, true), gr(null, true, "g2")] })]),
    [{ path: "/results/0/grader_results/1/passed", code: "result.null_score_passed" }],
  ],
  [
    "all graders null with result passed: true",
    resultSet([result({ grader_results: [gr(null, false), gr(null, false, "g2")] })]),
    [{ path: "/results/0/passed", code: "result.all_null_passed" }],
  ],
  [
    "all graders null with result passed: false",
    resultSet([result({ passed: false, grader_results: [gr(null, false)] })]),
    [],
  ],
  [
    "an errored result without grader results",
    resultSet([result({ passed: false, grader_results: [], error: { type: "timeout" } })]),
    [],
  ],
  [
    "a group that is its own parent",
    resultSet([result()], { group: { group_id: "g", parent_group_id: "g" } }),
    [{ path: "/group/parent_group_id", code: "group.self_parent" }],
  ],
  [
    "a higher major version",
    resultSet([result()], { version: "2.0.0" }),
    [{ path: "/version", code: "version.unsupported" }],
  ],
  ["a higher minor version", resultSet([result()], { version: "1.4.0-rc.1" }), []],
  [
    "a non-boolean partial flag",
    resultSet([result()], { metadata: { openeval: { partial: "yes" } } }),
    [{ path: "/metadata/openeval/partial", code: "resultset.partial_not_boolean" }],
  ],
  ["no results", resultSet([]), [{ path: "/results", code: "schema.minItems" }]],
  [
    "a result without test_case_id",
    resultSet([{ passed: true, grader_results: [] }]),
    [{ path: "/results/0/test_case_id", code: "schema.required" }],
  ],
  [
    "an unknown error type",
    resultSet([result({ passed: false, error: { type: "oops" } })]),
    [{ path: "/results/0/error/type", code: "schema.enum" }],
  ],
  ["a minimal suite", suite(), []],
  [
    "duplicate test case ids",
    suite({
      test_cases: [1, 2, 3].map((n) => ({ id: n === 3 ? "a" : "a", input: "x", graders: ["g1"] })),
    }),
    [
      { path: "/test_cases/1/id", code: "suite.duplicate_test_case_id" },
      { path: "/test_cases/2/id", code: "suite.duplicate_test_case_id" },
    ],
  ],
  [
    "duplicate grader ids",
    suite({
      graders: [
        { id: "g1", type: "exact_match" },
        { id: "g1", type: "human" },
      ],
    }),
    [{ path: "/graders/1/id", code: "suite.duplicate_grader_id" }],
  ],
  [
    "a dangling grader reference",
    suite({ test_cases: [{ id: "t", input: "x", graders: ["g1", "nope"] }] }),
    [{ path: "/test_cases/0/graders/1", code: "suite.dangling_grader_ref" }],
  ],
  [
    "an inline grader (not a reference)",
    suite({
      test_cases: [{ id: "t", input: "x", graders: [{ id: "inline", type: "exact_match" }] }],
    }),
    [],
  ],
  [
    "an inline custom grader without handler",
    suite({ test_cases: [{ id: "t", input: "x", graders: [{ id: "c", type: "custom" }] }] }),
    [{ path: "/test_cases/0/graders/0/params/handler", code: "schema.required" }],
  ],
  [
    "a grader reference that is neither string nor object",
    suite({ test_cases: [{ id: "t", input: "x", graders: [42] }] }),
    [{ path: "/test_cases/0/graders/0", code: "schema.type" }],
  ],
  [
    "test_cases_file instead of test_cases",
    suite({ test_cases: undefined, test_cases_file: "cases.jsonl" }),
    [],
  ],
  [
    "both test_cases and test_cases_file",
    suite({ test_cases_file: "cases.jsonl" }),
    [{ path: "/test_cases_file", code: "suite.test_cases_and_file" }],
  ],
  [
    "neither test_cases nor test_cases_file",
    suite({ test_cases: undefined }),
    [{ path: "/test_cases", code: "schema.required" }],
  ],
  [
    "an llm_judge prompt without a placeholder",
    suite({
      graders: [{ id: "g1", type: "llm_judge", params: { model: "m", prompt: "Is it good?" } }],
    }),
    [{ path: "/graders/0/params/prompt", code: "grader.prompt_without_placeholder" }],
  ],
  [
    "a regex that does not compile",
    suite({ graders: [{ id: "g1", type: "regex", params: { pattern: "(unclosed" } }] }),
    [{ path: "/graders/0/params/pattern", code: "grader.invalid_regex" }],
  ],
  [
    "an RE2 pattern with inline flags",
    suite({ graders: [{ id: "g1", type: "regex", params: { pattern: "(?i)^paris$" } }] }),
    [],
  ],
  [
    "a json_schema grader whose schema is not a JSON Schema",
    suite({ graders: [{ id: "g1", type: "json_schema", params: { schema: { type: 12 } } }] }),
    [{ path: "/graders/0/params/schema", code: "grader.invalid_json_schema" }],
  ],
  [
    "a json_path grader whose path does not start at $",
    suite({
      graders: [{ id: "g1", type: "json_path", params: { path: "status", expected: "ok" } }],
    }),
    [{ path: "/graders/0/params/path", code: "grader.invalid_json_path" }],
  ],
];

describe("validateDocument", () => {
  it.each(cases)("%s", (_name, doc, expected) => {
    const { valid, errors } = validateDocument(doc);
    expect(errors.map(({ path, code }) => ({ path, code }))).toEqual(expected);
    expect(valid).toBe(expected.length === 0);
  });

  it.each([
    [{ results: [] }, "resultset"],
    [{ test_cases_file: "x.jsonl" }, "suite"],
    [{ id: "t", input: "x" }, "testcase"],
    [{ id: "t", graders: ["g"] }, "testcase"],
    [{ id: "g", type: "exact_match" }, "grader"],
    [{ test_case_id: "t", passed: true }, "result"],
  ])("tells the kind of %j", (doc, kind) => {
    expect(validateDocument(doc).kind).toBe(kind);
  });

  it("reports a document of no known shape as kind.unknown", () => {
    for (const doc of [[], "text", null, { hello: 1 }]) {
      expect(validateDocument(doc)).toMatchObject({
        valid: false,
        kind: undefined,
        errors: [{ path: "", code: "kind.unknown" }],
      });
    }
  });

  it("validates against the kind it is given, whatever the shape", () => {
    expect(validateDocument({ id: "g", type: "exact_match" }, "suite")).toMatchObject({
      valid: false,
      kind: "suite",
    });
  });

  it("names the date-time format and the offending value", () => {
    const { errors } = validateDocument(resultSet([result()], { started_at: "2026-01-15 10:30" }));
    expect(errors).toMatchObject([{ path: "/started_at", code: "schema.format" }]);
    expect(errors[0]?.message).toMatch(/RFC 3339.*"2026-01-15 10:30"/);
  });

  it("accepts RFC 3339 date-times with any offset, lower-case separators and fractions", () => {
    for (const at of [
      "2026-01-15T10:30:00+05:30",
      "2026-01-15t10:30:00.123z",
      "2026-01-15T10:30:00-00:00",
    ]) {
      expect(validateDocument(resultSet([result({ completed_at: at })])).errors).toEqual([]);
    }
  });

  it("reports an input of the wrong type once, naming both allowed types", () => {
    const { errors } = validateDocument({ id: "t", input: 3, graders: ["g"] });
    expect(errors).toEqual([
      { path: "/input", code: "schema.type", message: "must be string or array, got 3" },
    ]);
  });

  it("escapes JSON Pointer segments", () => {
    const { errors } = validateDocument(
      resultSet([result()], { metadata: { "openeval.partial": 1 }, provider: { "a/b~c": 1 } }),
    );
    expect(errors.map((e) => e.path)).toEqual(["/provider/a~1b~0c", "/metadata/openeval.partial"]);
  });
});
