import { jsonShape, mayRepeatKeys, MAX_DOCUMENT_DEPTH, type Json } from "../core/json.js";
import { findRepeatedKey } from "../core/json-text.js";
import type { ValidationError } from "./validation-types.js";

/**
 * A `json.duplicate_key` error when an object of the parsed `text` repeats a key (`JSON.parse`
 * kept only the last value, so the document validated may not be the one written), at the
 * repetition's 1-based line and column within `text`. The text is scanned only when the cheap
 * check of `mayRepeatKeys` says it may repeat one.
 *
 * @example repeatedKeyError('{"a": 1, "a": 2}', { a: 2 })
 * // { path: "/a", code: "json.duplicate_key", message: 'duplicate key "a" …', line: 1, column: 10 }
 */
export function repeatedKeyError(
  text: string,
  value: unknown,
): (ValidationError & { line: number; column: number }) | undefined {
  const shape = jsonShape(value as Json, MAX_DOCUMENT_DEPTH);
  // The scanner recurses per level: a text this deep is `parseJson`'s `json.too_deep` already.
  if (shape.tooDeep || !mayRepeatKeys(text, shape)) return undefined;
  const found = findRepeatedKey(text);
  if (found === undefined) return undefined;
  return {
    path: found.pointer,
    code: "json.duplicate_key",
    message: `duplicate key ${JSON.stringify(found.key)}: JSON keeps only the last value`,
    line: found.line,
    column: found.column,
  };
}
