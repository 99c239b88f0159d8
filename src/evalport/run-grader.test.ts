import { describe, expect, it } from "vitest";
import type { ScorerArgs } from "../core/eval.js";
import type { Json } from "../core/json.js";
import { queryJsonPath } from "./json-path-grader.js";
import { createGraderRunner } from "./run-grader.js";
import type { SuiteGrader } from "./suite-schema.js";
import { solverContext } from "../../test/helpers/solver-context.js";
import { createSandbox } from "../sandbox/index.js";
import { SKIP_SANDBOX } from "../../test/helpers/sandbox.js";

const grade = createGraderRunner({
  endpoint: {},
  handlers: { "com.example.len": ({ output }) => String(output).length / 10 },
});

function args(output: Json, target?: string): ScorerArgs {
  const sample = { id: "tc", input: "q", ...(target === undefined ? {} : { target }) };
  return { sample, output, ctx: solverContext() };
}

const g = (type: string, params?: Record<string, Json>): SuiteGrader => ({
  id: "g",
  type,
  ...(params === undefined ? {} : { params }),
});

describe("EvalPort graders", () => {
  it.each([
    ["exact_match trims by default", g("exact_match"), " Paris\n", "Paris", 1],
    ["exact_match is case-sensitive", g("exact_match"), "paris", "Paris", 0],
    ["exact_match ignore_case", g("exact_match", { ignore_case: true }), "paris", "Paris", 1],
    ["exact_match no trim", g("exact_match", { trim_whitespace: false }), "Paris ", "Paris", 0],
    ["contains", g("contains", { substring: "Par" }), "in Paris", undefined, 1],
    ["contains case", g("contains", { substring: "par" }), "in Paris", undefined, 0],
    [
      "contains ignore_case",
      g("contains", { substring: "par", ignore_case: true }),
      "Paris",
      undefined,
      1,
    ],
    ["regex", g("regex", { pattern: "^\\d+$" }), "123", undefined, 1],
    ["regex RE2 inline flag", g("regex", { pattern: "(?i)^yes$" }), "YES", undefined, 1],
    ["regex flags param", g("regex", { pattern: "^yes$", flags: "i" }), "YES", undefined, 1],
    ["json_schema valid", g("json_schema", { schema: { type: "array" } }), "[1]", undefined, 1],
    ["json_schema invalid", g("json_schema", { schema: { type: "array" } }), "{}", undefined, 0],
    [
      "json_schema fenced",
      g("json_schema", { schema: { type: "array" } }),
      "```json\n[1]\n```",
      undefined,
      1,
    ],
    [
      "json_schema strict refuses a fence",
      g("json_schema", { schema: { type: "array" }, strict: true }),
      "```json\n[1]\n```",
      undefined,
      0,
    ],
    [
      "json_path eq",
      g("json_path", { path: "$.a[1].b", expected: "x" }),
      '{"a":[0,{"b":"x"}]}',
      undefined,
      1,
    ],
    [
      "json_path gt",
      g("json_path", { path: "$.n", expected: "3", operator: "gt" }),
      '{"n":4}',
      undefined,
      1,
    ],
    [
      "json_path contains",
      g("json_path", { path: "$.tags", expected: "b", operator: "contains" }),
      '{"tags":["a","b"]}',
      undefined,
      1,
    ],
    ["json_path missing", g("json_path", { path: "$.x", expected: "1" }), '{"n":4}', undefined, 0],
    ["numeric", g("numeric", { handler: "stet.numeric", tolerance: 0.1 }), "3.2", "3.14", 1],
    ["numeric outside", g("numeric", { handler: "any", tolerance: 0.01 }), "3.2", "3.14", 0],
    ["custom numeric", g("custom", { handler: "numeric" }), "so 42", "42", 1],
    ["registered handler", g("ragas_x", { handler: "com.example.len" }), "12345", undefined, 0.5],
  ])("%s", async (_, grader, output, target, expected) => {
    expect(await grade(grader, args(output, target))).toMatchObject({ value: expected });
  });

  it.each([
    ["code without a sandbox", g("code", { language: "python", source: "x" }), "grader_error"],
    ["unknown custom handler", g("custom", { handler: "x.y" }), "unsupported_grader_type"],
    ["unknown type", g("trulens_feedback", { handler: "t" }), "unsupported_grader_type"],
    ["human", g("human", { instructions: "Rate it" }), "human_review_pending"],
    ["exact_match without expected_output", g("exact_match"), "grader_error"],
    [
      "json_path with a wildcard",
      g("json_path", { path: "$.a[*]", expected: "1" }),
      "unsupported_grader_type",
    ],
  ])("%s: a null score with a skip reason, never a throw", async (_, grader, reason) => {
    const score = await grade(grader, args('{"a":[1]}'));
    expect(score).toMatchObject({
      value: null,
      skipped: reason,
      metadata: { "evalport.grader_type": grader.type, "evalport.passed": false },
    });
  });

  it("passes against params.threshold, default 1", async () => {
    const judge = g("custom", { handler: "com.example.len", threshold: 0.5 });
    expect(await grade(judge, args("123456"))).toMatchObject({
      value: 0.6,
      metadata: { "evalport.passed": true },
    });
    const strict = g("custom", { handler: "com.example.len" });
    expect(await grade(strict, args("123456"))).toMatchObject({
      metadata: { "evalport.passed": false },
    });
  });
});

describe.skipIf(SKIP_SANDBOX)("the code grader, in the bubblewrap sandbox", () => {
  const sandboxed = createGraderRunner({ endpoint: {}, sandbox: createSandbox() });
  const py = (source: string, more: Record<string, Json> = {}) =>
    g("code", { language: "python", source, ...more });
  const js = (source: string) => g("code", { language: "javascript", source });

  it.each([
    [
      "python, equal",
      py("def grade(i, o, e, c):\n    return 1.0 if o.strip() == e else 0.0"),
      " 4\n",
      "4",
      1,
    ],
    ["python, differs", py("def grade(i, o, e, c):\n    return o == e"), "5", "4", 0],
    [
      "python, partial",
      py("def grade(i, o, e, c):\n    print('noise')\n    return 0.5"),
      "x",
      "4",
      0.5,
    ],
    [
      "python sees the context",
      py("def grade(i, o, e, c):\n    return c['test_case_id'] == 'tc' and i == 'q'"),
      "x",
      "4",
      1,
    ],
    [
      "javascript, equal",
      js("function grade(i, o, e, c) { return o.trim() === e ? 1 : 0; }"),
      "4 ",
      "4",
      1,
    ],
    ["javascript, async", js("async function grade(i, o, e) { return o === e; }"), "3", "4", 0],
  ])("%s", async (_, grader, output, target, expected) => {
    const score = await sandboxed(grader, args(output, target));
    expect(score).toMatchObject({ value: expected, metadata: { "evalport.grader_type": "code" } });
  });

  it("takes an output that tries to break out of its string as data", async () => {
    const grader = py("def grade(i, o, e, c):\n    return o == e");
    const output = '"""); import os; os._exit(0); ("""\\\u0000';
    expect(await sandboxed(grader, args(output, output))).toMatchObject({ value: 1 });
  });

  it.each([
    [
      "a grade outside [0, 1]",
      py("def grade(i, o, e, c):\n    return 7"),
      /must return a number in \[0, 1\]/,
    ],
    [
      "a crash",
      py("def grade(i, o, e, c):\n    raise ValueError('boom')"),
      /exited with code 1.*ValueError: boom/s,
    ],
    [
      "timeout_ms",
      py("def grade(i, o, e, c):\n    while True: pass", { timeout_ms: 500 }),
      /timed out after 500 ms/,
    ],
    ["an unknown language", g("code", { language: "ruby", source: "x" }), /python or javascript/],
  ])("%s is a grader error", async (_, grader, message) => {
    const score = await sandboxed(grader, args("x", "y"));
    expect(score).toMatchObject({
      value: null,
      skipped: "grader_error",
      explanation: expect.stringMatching(message),
    });
  });
});

describe("queryJsonPath", () => {
  it.each([
    ["$", { a: 1 }, { found: true, value: { a: 1 } }],
    ["$.a.b", { a: { b: null } }, { found: true, value: null }],
    ["$['a b']", { "a b": 2 }, { found: true, value: 2 }],
    ['$["x"][-1]', { x: [1, 2] }, { found: true, value: 2 }],
    ["$.a", [1], { found: false }],
    ["$.toString", {}, { found: false }],
  ])("%s", (path, doc, expected) => {
    expect(queryJsonPath(doc as Json, path)).toEqual(expected);
  });

  it.each(["$..a", "$.a[*]", "$.a[0:2]", "$[?(@.a)]", "a.b"])("%s is unsupported", (path) => {
    expect(queryJsonPath({}, path)).toHaveProperty("unsupported");
  });
});
