import type { Scorer } from "../core/eval.js";
import { canonicalJson, jsonSchema } from "../core/json.js";
import type { Json } from "../core/json.js";

export interface JsonMatchOptions {
  /** Pass when the target is contained in the output (extra object keys allowed). Default false. */
  subset?: boolean;
}

/**
 * 1 when the output, read as JSON (a ```json fenced block is accepted), deep-equals the target,
 * or contains it with `subset`. Object key order never matters. A target given as a string of
 * JSON is parsed first.
 *
 * @example scorers.jsonMatch({ subset: true }) // output {"a":1,"b":2} matches target {"a":1}
 */
export function jsonMatch(options: JsonMatchOptions = {}): Scorer {
  return {
    name: "json_match",
    describe: () => ({ kind: "json_match", subset: options.subset === true }),
    score: ({ sample, output }) => {
      if (sample.target === undefined) {
        throw new Error(`scorer "json_match" needs a target, and sample "${sample.id}" has none`);
      }
      const target =
        typeof sample.target === "string"
          ? (parseJson(sample.target) ?? sample.target)
          : sample.target;
      const actual = typeof output === "string" ? parseJson(output) : output;
      if (actual === undefined) return { value: 0, explanation: "the output is not JSON" };
      const ok = options.subset
        ? isSubset(target, actual)
        : canonicalJson(target) === canonicalJson(actual);
      return { value: ok, answer: canonicalJson(actual) };
    },
  };
}

/**
 * Parses text as JSON, or the content of its first ``` fenced block; undefined when neither is JSON.
 *
 * @example parseJson('Here:\n```json\n{"a": 1}\n```') // { a: 1 }
 */
export function parseJson(text: string): Json | undefined {
  const attempts = [text, /```(?:json|JSON)?[ \t]*\r?\n([\s\S]*?)```/.exec(text)?.[1]];
  for (const candidate of attempts) {
    if (candidate === undefined) continue;
    try {
      const parsed = jsonSchema.safeParse(JSON.parse(candidate));
      if (parsed.success) return parsed.data;
    } catch {
      // Not JSON; try the next form.
    }
  }
  return undefined;
}

/**
 * True when every member of `expected` is in `actual`: objects may have extra keys, arrays must
 * have the same length with each element a subset, scalars must be equal.
 *
 * @example isSubset({ a: 1 }, { a: 1, b: 2 }) // true
 */
export function isSubset(expected: Json, actual: Json): boolean {
  if (Array.isArray(expected)) {
    return (
      Array.isArray(actual) &&
      actual.length === expected.length &&
      expected.every((item, i) => isSubset(item, actual[i] as Json))
    );
  }
  if (expected !== null && typeof expected === "object") {
    if (actual === null || typeof actual !== "object" || Array.isArray(actual)) return false;
    return Object.entries(expected).every(
      ([key, value]) => Object.hasOwn(actual, key) && isSubset(value, actual[key] as Json),
    );
  }
  return expected === actual;
}
