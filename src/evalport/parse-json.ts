import { lineAndColumn } from "../core/json-text.js";
import { findJsonSyntaxError } from "./find-json-syntax-error.js";

/** A JSON text parsed, or where and why it is not JSON (1-based line and column). */
export type ParsedJson =
  { ok: true; value: unknown } | { ok: false; line: number; column: number; message: string };

/**
 * `JSON.parse` that says where a syntax error is. Node 20's own messages do not always give a
 * position (`Unexpected token 'x', "..." is not valid JSON`), so on failure the text is
 * scanned again to find the first offending character.
 *
 * @example parseJson('{"a": 1,}') // { ok: false, line: 1, column: 9, message: "expected a property name (a double-quoted string), found '}'" }
 */
export function parseJson(text: string): ParsedJson {
  try {
    return { ok: true, value: JSON.parse(text) };
  } catch (error) {
    const found = locate(text, (error as Error).message);
    return { ok: false, ...lineAndColumn(text, found.offset), message: found.message };
  }
}

function locate(text: string, nativeMessage: string): { offset: number; message: string } {
  try {
    const found = findJsonSyntaxError(text);
    if (found) return found;
  } catch {
    // Nesting too deep for the scanner's recursion: fall back to what V8 said.
  }
  const position = /at position (\d+)/.exec(nativeMessage)?.[1];
  return {
    offset: position === undefined ? text.length : Number(position),
    message: nativeMessage,
  };
}
