import { describe, expect, it } from "vitest";
import type { Json } from "../core/json.js";
import { isSubset, jsonMatch, parseJson } from "./json-match.js";
import type { JsonMatchOptions } from "./json-match.js";
import { normalizeScore } from "../core/normalize.js";
import { solverContext } from "../../test/helpers/solver-context.js";

const ctx = solverContext();

describe("scorers.jsonMatch", () => {
  it.each<[string, JsonMatchOptions, Json, Json, number]>([
    ["equal objects, any key order", {}, '{"b": 2, "a": 1}', { a: 1, b: 2 }, 1],
    ["a different value", {}, '{"a": 2}', { a: 1 }, 0],
    ["an extra key", {}, '{"a": 1, "b": 2}', { a: 1 }, 0],
    ["an extra key, subset", { subset: true }, '{"a": 1, "b": 2}', { a: 1 }, 1],
    ["a missing key, subset", { subset: true }, '{"b": 2}', { a: 1 }, 0],
    ["nested subset", { subset: true }, '{"a": {"x": 1, "y": 2}, "b": 3}', { a: { x: 1 } }, 1],
    ["a fenced block", {}, 'Sure!\n```json\n{"a": [1, 2]}\n```\n', { a: [1, 2] }, 1],
    ["a target given as JSON text", {}, "[1, 2]", "[1,2]", 1],
    ["a JSON (non-string) output", {}, { a: 1 }, { a: 1 }, 1],
    ["not JSON", {}, "a: 1", { a: 1 }, 0],
    ["a plain string target", {}, '"yes"', "yes", 1],
  ])("%s", async (_, options, output, target, value) => {
    const scorer = jsonMatch(options);
    const raw = await scorer.score({ sample: { id: "s", input: "q", target }, output, ctx });
    expect(normalizeScore(scorer.name, raw)).toMatchObject({ scorer: "json_match", value });
  });

  it("throws without a target", () => {
    expect(() => jsonMatch().score({ sample: { id: "s", input: "q" }, output: "{}", ctx })).toThrow(
      /target/,
    );
  });
});

describe("isSubset", () => {
  it.each<[Json, Json, boolean]>([
    [{ a: 1 }, { a: 1, b: 2 }, true],
    [[{ a: 1 }], [{ a: 1, b: 2 }], true],
    [[1], [1, 2], false],
    [{ a: null }, {}, false],
    [{ a: 1 }, [1], false],
    ["x", "x", true],
  ])("%j ⊆ %j is %s", (expected, actual, result) => {
    expect(isSubset(expected, actual)).toBe(result);
  });
});

describe("parseJson", () => {
  it.each<[string, Json | undefined]>([
    ['{"a":1}', { a: 1 }],
    ["```\n[1]\n```", [1]],
    ["nothing", undefined],
  ])("%j → %j", (text, expected) => {
    expect(parseJson(text)).toEqual(expected);
  });
});
