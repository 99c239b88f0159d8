import { canonicalJson } from "../core/json.js";

/**
 * Combines two JSON values so that the result never depends on order or grouping
 * (commutative, associative, idempotent): objects merge key by key, recursively; an object
 * wins over a non-object; of two other values (strings, numbers, arrays, …) the one whose
 * canonical JSON sorts last is kept; `undefined` is "nothing". Merge uses it for header fields
 * and metadata on which its inputs may disagree.
 *
 * @example joinJson({ a: 1, b: { c: "x" } }, { b: { d: 2 }, a: 3 }) // { a: 3, b: { c: "x", d: 2 } }
 */
export function joinJson(a: unknown, b: unknown): unknown {
  if (a === undefined) return b;
  if (b === undefined) return a;
  const objA = isPlainObject(a);
  const objB = isPlainObject(b);
  if (objA && objB) {
    const out: Record<string, unknown> = {};
    for (const key of [...new Set([...Object.keys(a), ...Object.keys(b)])].sort()) {
      out[key] = joinJson(a[key], b[key]);
    }
    return out;
  }
  if (objA !== objB) return objA ? a : b;
  return canonicalJson(b) > canonicalJson(a) ? b : a;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
