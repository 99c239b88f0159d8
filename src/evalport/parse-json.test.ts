import { describe, expect, it } from "vitest";
import { findJsonSyntaxError } from "./find-json-syntax-error.js";
import { parseJson } from "./parse-json.js";

describe("parseJson", () => {
  it("parses valid JSON", () => {
    expect(parseJson('{"a": [1, "x", null]}')).toEqual({ ok: true, value: { a: [1, "x", null] } });
  });

  it.each([
    ["truncated document", '{\n  "a": [1,\n  2', 3, 4, /end of input/],
    ["trailing comma", '{\n  "a": 1,\n}', 3, 1, /trailing comma/],
    ["missing comma", '{"a": 1\n "b": 2}', 2, 2, /expected ',' or '}'/],
    ["single quotes", "{'a': 1}", 1, 2, /property name/],
    ["bare word", '{"a": nope}', 1, 7, /expected a JSON value/],
    ["unterminated string", '["abc', 1, 6, /unterminated string/],
    ["raw newline in string", '["a\nb"]', 1, 4, /control characters/],
    ["bad escape", '["\\x"]', 1, 3, /invalid escape/],
    ["two documents", "{} {}", 1, 4, /after the JSON value/],
    ["empty text", "", 1, 1, /end of input/],
    ["CRLF line endings", '{\r\n"a": 1,\r\n}', 3, 1, /trailing comma/],
  ])("%s", (_name, text, line, column, message) => {
    const parsed = parseJson(text);
    expect(parsed).toMatchObject({ ok: false, line, column });
    expect(parsed.ok ? "" : parsed.message).toMatch(message);
  });
});

describe("findJsonSyntaxError", () => {
  it.each([
    '{"a":[1,2.5e-3,{"b":"\\u00e9\\n"}],"c":true,"d":false,"e":null}',
    " [ ] ",
    '"x"',
    "-0",
  ])("agrees with JSON.parse that %s is valid", (text) => {
    expect(() => JSON.parse(text) as unknown).not.toThrow();
    expect(findJsonSyntaxError(text)).toBeUndefined();
  });
});
