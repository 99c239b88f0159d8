import { createRequire } from "node:module";
import type * as Jsonc from "jsonc-parser";

/** A JSON text parsed, or where and why it is not JSON (1-based line and column). */
export type ParsedJson =
  { ok: true; value: unknown } | { ok: false; line: number; column: number; message: string };

/**
 * `JSON.parse` that says where a syntax error is. Node 20's own messages do not always give a
 * position (`Unexpected token 'x', "..." is not valid JSON`), so on failure the text is
 * scanned again to find the first offending character.
 *
 * @example parseJson('{"a": 1,}') // { ok: false, line: 1, column: 9, message: `expected a value after ',' (trailing comma), found "}"` }
 */
export function parseJson(text: string): ParsedJson {
  try {
    return { ok: true, value: JSON.parse(text) };
  } catch (error) {
    const found = locate(text, (error as Error).message);
    return { ok: false, ...lineAndColumn(text, found.offset), message: found.message };
  }
}

type Found = { offset: number; message: string };

function locate(text: string, nativeMessage: string): Found {
  try {
    const found = findJsonSyntaxError(text);
    if (found) return found;
  } catch {
    // Nesting too deep for jsonc-parser's recursion: fall back to what V8 said.
  }
  const position = /at position (\d+)/.exec(nativeMessage)?.[1];
  return {
    offset: position === undefined ? text.length : Number(position),
    message: nativeMessage,
  };
}

const VALUE = "expected a JSON value";
const PROPERTY = "expected a property name (a double-quoted string)";
const STRING_ERRORS = new Set([
  "UnexpectedEndOfString",
  "InvalidEscapeCharacter",
  "InvalidUnicode",
  "InvalidCharacter",
]);

/**
 * The offset of the first syntax error in a JSON text (RFC 8259: no comments, no trailing
 * commas) with a short description, or `undefined` when there is none. Only used after
 * `JSON.parse` has failed, so jsonc-parser is loaded then, not at start-up.
 *
 * @example findJsonSyntaxError('[1, 2') // { offset: 5, message: "unexpected end of input, expected ',' or ']'" }
 */
export function findJsonSyntaxError(text: string): Found | undefined {
  const { visit, printParseErrorCode } = createRequire(import.meta.url)(
    "jsonc-parser",
  ) as typeof Jsonc;
  // jsonc-parser names the wrong token but not what the grammar wanted there; that is followed
  // from its events.
  const closers: string[] = [];
  let expected = VALUE;
  const afterValue = (): void => {
    const close = closers.at(-1);
    expected = close ? `expected ',' or '${close}'` : "unexpected content after the JSON value";
  };
  const end = (offset: number): void => {
    // Also called at the end of input, before the missing '}' or ']' is reported.
    if (text[offset] !== closers.at(-1)) return;
    closers.pop();
    afterValue();
  };
  // A fault inside a string or number is reported as the token is read, before the parser sees
  // the token; when the parser then rejects the token itself, that is the first error.
  let inToken: { token: number; found: Found } | undefined;
  let found: Found | undefined;
  const report = (token: number, error: Found, isInToken = false): void => {
    if (inToken && inToken.token !== token) found = inToken.found;
    else if (isInToken) inToken = { token, found: error };
    else found = error;
  };
  visit(
    text,
    {
      onObjectBegin: () => {
        closers.push("}");
        expected = PROPERTY;
      },
      onObjectProperty: () => {
        expected = "expected ':' after the property name";
      },
      onObjectEnd: end,
      onArrayBegin: () => {
        closers.push("]");
        expected = VALUE;
      },
      onArrayEnd: end,
      onLiteralValue: afterValue,
      onSeparator: (separator) => {
        expected = separator === "," && closers.at(-1) === "}" ? PROPERTY : VALUE;
      },
      onError: (error, offset, length) => {
        if (found) return;
        const code = printParseErrorCode(error);
        if (STRING_ERRORS.has(code)) {
          report(offset, stringFault(text, offset, length), true);
        } else if (code === "UnexpectedEndOfNumber") {
          report(offset, at(text, offset + length, "expected a digit"), true);
        } else if (code === "InvalidCommentToken") {
          report(offset, at(text, offset, "comments are not allowed in JSON"));
        } else {
          const trailing =
            text[offset] === closers.at(-1) && text.slice(0, offset).trimEnd().endsWith(",");
          report(
            offset,
            at(text, offset, trailing ? "expected a value after ',' (trailing comma)" : expected),
          );
        }
      },
    },
    { disallowComments: true, allowTrailingComma: false },
  );
  return found ?? inToken?.found;
}

const CONTROL = "control characters must be escaped in strings";
/** Skips valid escapes; captures a backslash that starts none, or a raw control character. */
// eslint-disable-next-line no-control-regex -- JSON strings may not hold U+0000 to U+001F raw.
const STRING_FAULT = /\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4})|(\\|[\u0000-\u001f])/g;

/**
 * The first fault in the string token at `start`: jsonc-parser reports the token, and only the
 * last fault in it.
 */
function stringFault(text: string, start: number, length: number): Found {
  for (const match of text.slice(start, start + length).matchAll(STRING_FAULT)) {
    const fault = match[1];
    if (fault)
      return at(text, start + match.index, fault === "\\" ? "invalid escape sequence" : CONTROL);
  }
  // The token ends at a raw line break or at the end of input.
  const stop = start + length;
  return at(text, stop, stop < text.length ? CONTROL : "unterminated string");
}

/** `expected` at `offset`, and the character found there instead. */
function at(text: string, offset: number, expected: string): Found {
  const code = text.codePointAt(offset);
  if (code === undefined) return { offset, message: `unexpected end of input, ${expected}` };
  return { offset, message: `${expected}, found ${JSON.stringify(String.fromCodePoint(code))}` };
}

function lineAndColumn(text: string, offset: number): { line: number; column: number } {
  const before = text.slice(0, offset);
  const line = before.split("\n").length;
  return { line, column: offset - before.lastIndexOf("\n") };
}
