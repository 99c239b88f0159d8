import { describe, expect, it } from "vitest";
import { jsonShape, mayRepeatKeys, MAX_JSON_DEPTH, type Json } from "./json.js";
import { findRepeatedKey, findTooDeep, lineAndColumn } from "./json-text.js";

const deepText = (levels: number) => "[".repeat(levels) + "]".repeat(levels);

describe("jsonShape", () => {
  it("counts members and strings, and stops at the depth limit", () => {
    expect(jsonShape({ a: ["x", { b: 1, c: "y" }], d: null })).toEqual({
      members: 4,
      strings: 2,
      tooDeep: false,
    });
    expect(jsonShape(JSON.parse(deepText(MAX_JSON_DEPTH)) as Json).tooDeep).toBe(false);
    expect(jsonShape(JSON.parse(deepText(MAX_JSON_DEPTH + 1)) as Json).tooDeep).toBe(true);
    // JSON.parse does not recurse; the walk must not either, past the limit.
    expect(jsonShape(JSON.parse(deepText(100_000)) as Json).tooDeep).toBe(true);
  });
});

describe("mayRepeatKeys", () => {
  const may = (text: string) => mayRepeatKeys(text, jsonShape(JSON.parse(text) as Json));

  it.each([
    '{"a":1,"b":2}',
    '{"a": "x: y", "b": {"c": "\\"quoted\\": yes"}}',
    '{"a":"ends in a backslash \\\\","b":"\\\\\\"","c":[":"]}',
    '{"a":{"b":1},"c":{"b":2}}',
  ])("is false for %s, which repeats no key", (text) => {
    expect(may(text)).toBe(false);
  });

  it.each([
    '{"a":1,"a":2}',
    '{"x":"1:2","in":{"a":1,"b":{},"a":"2"}}',
    '{"a":1,"\\u0061":2}',
    '[{"k":"v:w","k":"v"}]',
  ])("is true for %s, which repeats a key", (text) => {
    expect(may(text)).toBe(true);
  });
});

describe("findRepeatedKey", () => {
  it("names the repeated key, where it repeats and its pointer", () => {
    expect(findRepeatedKey('{"a": 1,\n "a": 2}')).toEqual({
      key: "a",
      pointer: "/a",
      offset: 10,
      line: 2,
      column: 2,
    });
    expect(findRepeatedKey('[{"x":{"a/b":1}}, {"in":{"m~":1,"m~":2}}]')).toMatchObject({
      key: "m~",
      pointer: "/1/in/m~0",
    });
    expect(findRepeatedKey('{"a":{"b":1},"c":{"b":2}}')).toBeUndefined();
  });
});

describe("findTooDeep", () => {
  it("finds the first container past the limit, skipping strings", () => {
    expect(findTooDeep('{"a":"[[[[",\n"b":[[1]]}', 2)).toEqual({ offset: 18, line: 2, column: 6 });
    expect(findTooDeep('["\\"[[", [1]]', 2)).toBeUndefined();
    expect(findTooDeep(deepText(200_000), MAX_JSON_DEPTH)?.offset).toBe(MAX_JSON_DEPTH);
  });

  it("scans text that is not JSON, and ends at an unterminated string", () => {
    expect(findTooDeep("[".repeat(5_000), 3)).toEqual({ offset: 3, line: 1, column: 4 });
    expect(findTooDeep('[["abc', 3)).toBeUndefined();
    expect(findTooDeep('["\\', 3)).toBeUndefined();
  });

  it("gives 1-based lines and columns", () => {
    expect(lineAndColumn("a\nbc", 3)).toEqual({ line: 2, column: 2 });
    expect(lineAndColumn("abc", 0)).toEqual({ line: 1, column: 1 });
  });
});
