import { MAX_DOCUMENT_DEPTH, nestsTooDeep } from "../core/json.js";
import { findTooDeep, lineAndColumn } from "../core/json-text.js";
import { findJsonSyntaxError } from "../core/json-syntax-error.js";
import type { ValidationError } from "./validation-types.js";

/** Why a JSON text was refused, and where (1-based line and column). */
export interface JsonRefusal {
  ok: false;
  /** `json.syntax`: not JSON; `json.too_deep`: JSON nested deeper than stet reads. */
  code: "json.syntax" | "json.too_deep";
  line: number;
  column: number;
  message: string;
}

/** A JSON text parsed, or where and why it was refused. */
export type ParsedJson = { ok: true; value: unknown } | JsonRefusal;

/**
 * `JSON.parse` that says where a syntax error is, and refuses a document nested more than
 * `MAX_DOCUMENT_DEPTH` levels deep (`json.too_deep`, at the first bracket too deep): every
 * validator and scanner that walks a document afterwards recurses per level. Node 20's own
 * messages do not always give a position (`Unexpected token 'x', "..." is not valid JSON`), so
 * on failure the text is scanned again, to the same depth, to find the first offending
 * character (or the first bracket too deep, when that comes first).
 *
 * @example parseJson('{"a": 1,}') // { ok: false, code: "json.syntax", line: 1, column: 9, message: "expected a property name (a double-quoted string), found '}'" }
 */
export function parseJson(text: string): ParsedJson {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    const found = findJsonSyntaxError(text, MAX_DOCUMENT_DEPTH);
    if (found?.tooDeep) return refusal("json.too_deep", text, found.offset, found.message);
    // Should V8 refuse a text the scanner accepts, V8's own message and position stand.
    const position = /at position (\d+)/.exec((error as Error).message)?.[1];
    const offset = found?.offset ?? (position === undefined ? text.length : Number(position));
    return refusal("json.syntax", text, offset, found?.message ?? (error as Error).message);
  }
  if (nestsTooDeep(value)) {
    const at = findTooDeep(text, MAX_DOCUMENT_DEPTH)!;
    return refusal("json.too_deep", text, at.offset, TOO_DEEP);
  }
  return { ok: true, value };
}

const TOO_DEEP = `nesting too deep: more than ${MAX_DOCUMENT_DEPTH} levels of arrays and objects`;

/**
 * The validation error for a refused text, at `path` "" (callers add `file`, `line`): a syntax
 * error's message after `notJson` ("not valid JSON", "line 3 is not JSON"); depth as it is.
 *
 * @example refusalError(parseJson("[1,"), "not valid JSON") // { path: "", code: "json.syntax", message: "not valid JSON: unexpected end of input, …", line: 1, column: 4 }
 */
export function refusalError(refusal: JsonRefusal, notJson: string): ValidationError {
  const { code, line, column } = refusal;
  const message = code === "json.syntax" ? `${notJson}: ${refusal.message}` : refusal.message;
  return { path: "", code, message, line, column };
}

function refusal(
  code: JsonRefusal["code"],
  text: string,
  offset: number,
  message: string,
): JsonRefusal {
  return { ok: false, code, ...lineAndColumn(text, offset), message };
}
