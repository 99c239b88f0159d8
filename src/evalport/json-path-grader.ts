import { canonicalJson, type Json } from "../core/json.js";
import type { ScoreValue } from "../core/eval.js";
import { parseJson } from "../scorers/json-match.js";
import { outputText } from "../scorers/targets.js";

/** What a JSONPath found, or why stet cannot evaluate the path. */
export type JsonPathResult =
  { found: true; value: Json } | { found: false } | { unsupported: string };

// `$`, then `.name`, `['name']`, `["name"]` or `[index]` segments: the subset of JSONPath that
// names one value. Wildcards, slices, filters and recursive descent select several values,
// which the spec's scalar comparison does not define.
const SEGMENT =
  /^(?:\.([A-Za-z_$][\w$-]*)|\[\s*(?:'((?:[^'\\]|\\.)*)'|"((?:[^"\\]|\\.)*)"|(-?\d+))\s*\])/;

/**
 * Evaluates a single-value JSONPath (`$.a.b[0]`, `$['key with space']`) against a JSON value.
 *
 * @example queryJsonPath({ status: "ok" }, "$.status") // { found: true, value: "ok" }
 * @example queryJsonPath([1], "$[*]") // { unsupported: "..." }
 */
export function queryJsonPath(root: Json, path: string): JsonPathResult {
  const keys = parsePath(path);
  if (!Array.isArray(keys)) return keys;
  let current: Json | undefined = root;
  for (const key of keys) {
    current = step(current, key);
    if (current === undefined) return { found: false };
  }
  return { found: true, value: current };
}

function parsePath(path: string): Array<string | number> | { unsupported: string } {
  if (!path.startsWith("$")) return { unsupported: `a JSONPath starts with "$", got "${path}"` };
  const keys: Array<string | number> = [];
  let rest = path.slice(1).trim();
  while (rest !== "") {
    const m = SEGMENT.exec(rest);
    if (!m) {
      return { unsupported: `stet evaluates only single-value JSONPaths; cannot read "${rest}"` };
    }
    rest = rest.slice(m[0].length).trim();
    keys.push(m[1] ?? unescape(m[2] ?? m[3]) ?? Number(m[4]));
  }
  return keys;
}

/**
 * The `json_path` grader: parse the output as JSON, read `path`, compare it with `expected`
 * using `operator` (eq, ne, gt, lt, gte, lte, contains). 1 when the comparison holds, else 0.
 *
 * @example jsonPathScore('{"status":"success"}', { path: "$.status", expected: "success" }) // { value: 1, ... }
 */
export function jsonPathScore(
  output: Json,
  params: { path: string; expected: string; operator?: string },
): ScoreValue {
  const doc = typeof output === "string" ? parseJson(output) : output;
  if (doc === undefined) return { value: 0, explanation: "the output is not JSON" };
  const result = queryJsonPath(doc, params.path);
  if ("unsupported" in result) {
    return { value: null, skipped: "unsupported_grader_type", explanation: result.unsupported };
  }
  if (!result.found) return { value: 0, explanation: `nothing at ${params.path}` };
  const operator = params.operator ?? "eq";
  const ok = compare(result.value, params.expected, operator);
  return { value: ok, answer: outputText(result.value) };
}

function compare(actual: Json, expected: string, operator: string): boolean {
  switch (operator) {
    case "eq":
      return equals(actual, expected);
    case "ne":
      return !equals(actual, expected);
    case "contains":
      return Array.isArray(actual)
        ? actual.some((item) => equals(item, expected))
        : outputText(actual).includes(expected);
    default: {
      const a = typeof actual === "number" ? actual : Number(actual);
      const b = Number(expected);
      if (Number.isNaN(a) || Number.isNaN(b) || expected.trim() === "") return false;
      if (operator === "gt") return a > b;
      if (operator === "lt") return a < b;
      if (operator === "gte") return a >= b;
      if (operator === "lte") return a <= b;
      throw new Error(`json_path: unknown operator "${operator}"`);
    }
  }
}

/** `expected` is a string in the spec; a non-string value compares with its JSON form. */
function equals(actual: Json, expected: string): boolean {
  if (typeof actual === "string") return actual === expected;
  if (typeof actual === "number") return expected.trim() !== "" && Number(expected) === actual;
  const parsed = parseJson(expected);
  return parsed !== undefined && canonicalJson(parsed) === canonicalJson(actual);
}

function step(value: Json | undefined, key: string | number): Json | undefined {
  if (typeof key === "number") {
    if (!Array.isArray(value)) return undefined;
    return value[key < 0 ? value.length + key : key];
  }
  if (value === null || typeof value !== "object" || Array.isArray(value)) return undefined;
  return Object.hasOwn(value, key) ? value[key] : undefined;
}

function unescape(quoted: string | undefined): string | undefined {
  return quoted?.replace(/\\(.)/g, "$1");
}
