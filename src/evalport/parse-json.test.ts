import { describe, expect, it } from "vitest";
import { MAX_DOCUMENT_DEPTH } from "../core/json.js";
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

describe("parseJson of text that is not JSON, with brackets in it", () => {
  it("is a syntax error where it is, not a depth to refuse", () => {
    expect(parseJson("\u001b[2J".repeat(100_000))).toMatchObject({
      ok: false,
      code: "json.syntax",
      line: 1,
      column: 1,
      message: `expected a JSON value, found "\\u001b"`,
    });
    expect(parseJson(`[1, x${"[".repeat(5_000)}`)).toMatchObject({
      code: "json.syntax",
      column: 5,
    });
  });
});

describe("parseJson of a document nested too deep", () => {
  const deep = (levels: number) => "[".repeat(levels) + "]".repeat(levels);

  it("reads one MAX_DOCUMENT_DEPTH levels deep", () => {
    expect(parseJson(deep(MAX_DOCUMENT_DEPTH))).toMatchObject({ ok: true });
  });

  it.each([
    ["one level deeper", deep(MAX_DOCUMENT_DEPTH + 1)],
    ["5,000 arrays", deep(5_000)],
    ["5,000 objects", '{"a":'.repeat(5_000) + "1" + "}".repeat(5_000)],
    ["5,000 arrays never closed (not JSON either)", "[".repeat(5_000)],
    ["200,000 arrays with a syntax error at the end", "[".repeat(200_000) + "x"],
  ])("refuses %s at the first bracket too deep, without a stack overflow", (_name, text) => {
    const parsed = parseJson(`\n ${text}`);
    expect(parsed).toMatchObject({
      ok: false,
      code: "json.too_deep",
      line: 2,
      message: `nesting too deep: more than ${MAX_DOCUMENT_DEPTH} levels of arrays and objects`,
    });
    const column = text.startsWith("{") ? 2 + 5 * MAX_DOCUMENT_DEPTH : 2 + MAX_DOCUMENT_DEPTH;
    expect(parsed.ok ? 0 : parsed.column).toBe(column);
  });
});
