import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { isStetError } from "../core/errors.js";
import { MAX_DOCUMENT_DEPTH } from "../core/json.js";
import { formatValidationError } from "./format-validation-error.js";
import { validateFile } from "./validate-file.js";

const dir = mkdtempSync(join(tmpdir(), "stet-validate-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function file(name: string, content: string): string {
  const path = join(dir, name);
  writeFileSync(path, content);
  return path;
}

const line = (value: unknown) => JSON.stringify(value);
const okResult = { test_case_id: "tc_1", passed: true, grader_results: [] };
const resultSet = {
  version: "1.0.0",
  suite_id: "s",
  run_id: "r",
  started_at: "2026-01-15T10:30:00Z",
  results: [okResult],
};

describe("validateFile", () => {
  it("validates a JSON document and names the file in each error", async () => {
    const path = file(
      "bad.json",
      JSON.stringify({ ...resultSet, started_at: "2026-01-15" }, null, 2),
    );
    expect(await validateFile(file("good.json", JSON.stringify(resultSet)))).toEqual({
      valid: true,
      kind: "resultset",
      errors: [],
    });
    expect(await validateFile(path)).toMatchObject({
      valid: false,
      kind: "resultset",
      errors: [{ file: path, path: "/started_at", code: "schema.format" }],
    });
  });

  it("reports truncated JSON with its line and column", async () => {
    const path = file("truncated.json", '{\n  "version": "1.0.0",\n  "results": [\n');
    const result = await validateFile(path);
    expect(result).toMatchObject({
      valid: false,
      errors: [{ file: path, line: 4, column: 1, code: "json.syntax" }],
    });
    expect(formatValidationError(result.errors[0]!)).toMatch(
      new RegExp(`^${path}:4:1: not valid JSON: unexpected end of input.*\\[json\\.syntax\\]$`),
    );
  });

  it("reports a repeated key with file:line:column and its pointer", async () => {
    const text = JSON.stringify(resultSet, null, 2).replace(
      '"run_id": "r",',
      '"run_id": "r",\n  "suite_id": "t",',
    );
    const path = file("repeated.json", text);
    const result = await validateFile(path);
    expect(result).toMatchObject({
      valid: false,
      errors: [{ file: path, line: 5, column: 3, path: "/suite_id", code: "json.duplicate_key" }],
    });
    expect(formatValidationError(result.errors[0]!)).toBe(
      `${path}:5:3: /suite_id: duplicate key "suite_id": JSON keeps only the last value [json.duplicate_key]`,
    );
  });

  it("reports a repeated key on a JSONL line, and none for keys repeated across objects", async () => {
    const repeated = '{"test_case_id":"tc_2","passed":true,"passed":false,"grader_results":[]}';
    const path = file("repeated.jsonl", `${line(okResult)}\n${repeated}\n`);
    expect(await validateFile(path)).toMatchObject({
      valid: false,
      errors: [{ file: path, line: 2, column: 38, path: "/passed", code: "json.duplicate_key" }],
    });
    const many = [okResult, { ...okResult, test_case_id: "tc_2" }].map(line).join("\n");
    expect(await validateFile(file("fine.jsonl", many))).toMatchObject({ valid: true });
  });

  it("skips a UTF-8 byte order mark", async () => {
    expect(
      await validateFile(file("bom.json", `\uFEFF${JSON.stringify(resultSet)}`)),
    ).toMatchObject({
      valid: true,
    });
  });

  it("validates each line of a Results JSONL and names the line of each problem", async () => {
    const text = [
      line(okResult),
      "",
      '{"test_case_id": "tc_2", "passed": tru',
      line({
        passed: true,
        grader_results: [{ grader_id: "g", type: "x", score: 1.5, passed: true }],
      }),
      line({ ...okResult, completed_at: "2026-01-15T10:30:00" }),
    ].join("\n");
    const path = file("results.jsonl", `${text}\n`);
    const result = await validateFile(path);
    expect(result.kind).toBe("result");
    expect(
      result.errors.map(({ line, column, path, code }) => ({ line, column, path, code })),
    ).toEqual([
      { line: 3, column: 36, path: "", code: "json.syntax" },
      { line: 4, column: undefined, path: "/test_case_id", code: "schema.required" },
      { line: 4, column: undefined, path: "/grader_results/0/score", code: "schema.maximum" },
      { line: 5, column: undefined, path: "/completed_at", code: "schema.format" },
    ]);
    expect(result.errors.every((e) => e.file === path)).toBe(true);
    expect(formatValidationError(result.errors[1]!)).toBe(
      `${path}:4: /test_case_id: must have required property 'test_case_id' [schema.required]`,
    );
  });

  it("checks test case ids across the lines of a test case JSONL", async () => {
    const tc = (id: string) => line({ id, input: "x", graders: ["g"] });
    const result = await validateFile(file("cases.jsonl", [tc("a"), tc("b"), tc("a")].join("\n")));
    expect(result).toMatchObject({
      valid: false,
      kind: "testcase",
      errors: [{ line: 3, path: "/id", code: "suite.duplicate_test_case_id" }],
    });
    expect(result.errors[0]?.message).toContain("line 1");
  });

  it("reads a suite's test_cases_file relative to the suite and checks its references", async () => {
    mkdirSync(join(dir, "suite"), { recursive: true });
    const cases = file(
      "suite/cases.jsonl",
      [
        line({ id: "a", input: "x", graders: ["g1"] }),
        line({ id: "b", input: "", graders: ["missing"] }),
      ].join("\n"),
    );
    const suite = { version: "1.0.0", id: "s", graders: [{ id: "g1", type: "exact_match" }] };
    const path = file(
      "suite/suite.json",
      JSON.stringify({ ...suite, test_cases_file: "cases.jsonl" }),
    );
    const result = await validateFile(path);
    expect(result).toMatchObject({ valid: false, kind: "suite" });
    expect(result.errors.map(({ file, line, path, code }) => ({ file, line, path, code }))).toEqual(
      [
        { file: cases, line: 2, path: "/input", code: "schema.minLength" },
        { file: cases, line: 2, path: "/graders/0", code: "suite.dangling_grader_ref" },
      ],
    );

    const gone = file(
      "suite/gone.json",
      JSON.stringify({ ...suite, test_cases_file: "nope.jsonl" }),
    );
    expect(await validateFile(gone)).toMatchObject({
      valid: false,
      errors: [{ file: gone, path: "/test_cases_file", code: "suite.test_cases_file_unreadable" }],
    });
  });

  it("reports an empty JSONL", async () => {
    expect(await validateFile(file("empty.jsonl", "\n\n"))).toMatchObject({
      valid: false,
      errors: [{ code: "file.empty" }],
    });
  });

  it("throws a StetError only for a file it cannot read", async () => {
    const error: unknown = await validateFile(join(dir, "absent.json")).catch((e: unknown) => e);
    expect(isStetError(error, "E_INVALID_INPUT")).toBe(true);
    expect((error as Error).message).toContain("absent.json");
  });
});

describe("validateFile of a document nested too deep", () => {
  // Each overflowed the stack (RangeError) in a recursive scanner after JSON.parse accepted it.
  const arrays = "[".repeat(5_000) + "]".repeat(5_000);
  const output = JSON.stringify({ ...resultSet, results: [{ ...okResult, actual_output: "x" }] });
  // The 1-based column of the first bracket past MAX_DOCUMENT_DEPTH: the document is level 1.
  it.each([
    ["a JSON file of 5,000 nested arrays", "deep.json", arrays, MAX_DOCUMENT_DEPTH + 1],
    [
      "a JSONL line of 5,000 nested objects",
      "deep.jsonl",
      `{"a":`.repeat(5_000) + "1" + "}".repeat(5_000),
      5 * MAX_DOCUMENT_DEPTH + 1,
    ],
    [
      "a ResultSet whose output nests 5,000 levels (at level 4 of the document)",
      "deep-output.json",
      output.replace('"x"', arrays),
      output.indexOf('"x"') + MAX_DOCUMENT_DEPTH - 3 + 1,
    ],
  ])("%s is one json.too_deep error where it is", async (_name, name, text, column) => {
    const result = await validateFile(file(name, text));
    expect(result).toEqual({
      valid: false,
      kind: undefined,
      errors: [
        {
          file: join(dir, name),
          path: "",
          code: "json.too_deep",
          line: 1,
          column,
          message: `nesting too deep: more than ${MAX_DOCUMENT_DEPTH} levels of arrays and objects`,
        },
      ],
    });
  });
});
