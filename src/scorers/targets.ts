import type { Json } from "../core/json.js";
import type { Sample } from "../core/types.js";

/**
 * The acceptable answers of a sample: a string, a number or boolean (as text), or an array
 * of those. Throws when the sample has no target or one that is not text-like.
 *
 * @example targetStrings({ id: "a", input: "?", target: ["4", "four"] }, "exact") // ["4", "four"]
 */
export function targetStrings(sample: Sample, scorer: string): string[] {
  const { target } = sample;
  if (target === undefined || target === null) {
    throw new Error(`scorer "${scorer}" needs a target, and sample "${sample.id}" has none`);
  }
  const values = Array.isArray(target) ? target : [target];
  if (values.length === 0) {
    throw new Error(`scorer "${scorer}": sample "${sample.id}" has an empty list of targets`);
  }
  return values.map((value) => {
    if (typeof value === "string") return value;
    if (typeof value === "number" || typeof value === "boolean") return String(value);
    throw new Error(
      `scorer "${scorer}" needs a string target or an array of strings; sample "${sample.id}" has ${JSON.stringify(value)}`,
    );
  });
}

/**
 * The output as text: strings as they are, other JSON serialized.
 *
 * @example outputText({ a: 1 }) // '{"a":1}'
 */
export function outputText(output: Json): string {
  return typeof output === "string" ? output : JSON.stringify(output);
}
