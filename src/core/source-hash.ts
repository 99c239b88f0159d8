import { sha256Hex } from "./fingerprint.js";

/**
 * A function's source in a layout-free form: whitespace kept only between two word characters
 * (as one space), and no `;` before `}`. The same TypeScript loaded by the bundle or by tsx (which
 * strips whitespace) then reads alike; an edit of only that layout does not count.
 *
 * @example layoutFree("function f(a) {\n  return a;\n}") // "function f(a){return a}"
 */
export function layoutFree(source: string): string {
  return source
    .replace(/\s+/g, " ")
    .replace(/ (?=[^\w$])|(?<=[^\w$]) /g, "")
    .replace(/;}/g, "}")
    .trim();
}

/**
 * sha256 (hex) of a function's layout-free source: how an identity names code it cannot
 * describe (a function solver, a scorer's `score`, a predicate).
 *
 * @example sourceSha256((a: number) => a + 1) // 64 hex characters
 */
export function sourceSha256(fn: (...args: never[]) => unknown): string {
  return sha256Hex(layoutFree(Function.prototype.toString.call(fn)));
}
