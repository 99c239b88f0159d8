import { describe, expect, it } from "vitest";
import type { Json } from "../core/json.js";
import { exact } from "./exact.js";
import type { ExactOptions } from "./exact.js";
import { normalizeScore } from "../core/normalize.js";
import { solverContext } from "../../test/helpers/solver-context.js";

const ctx = solverContext();
const score = async (options: ExactOptions, output: Json, target: Json) => {
  const scorer = exact(options);
  return normalizeScore(
    scorer.name,
    await scorer.score({ sample: { id: "s", input: "q", target }, output, ctx }),
  );
};

describe("scorers.exact", () => {
  it.each<[string, ExactOptions, Json, Json, number]>([
    ["equal strings", {}, "Paris", "Paris", 1],
    ["different strings", {}, "Paris", "London", 0],
    ["case differs (sensitive by default)", {}, "paris", "Paris", 0],
    ["case differs, insensitive", { caseSensitive: false }, "PARIS", "paris", 1],
    ["surrounding whitespace (trimmed by default)", {}, "  Paris\n", "Paris", 1],
    ["surrounding whitespace, trim off", { trim: false }, "Paris\n", "Paris", 0],
    ["inner whitespace", {}, "New  York", "New York", 0],
    ["inner whitespace ignored", { ignoreWhitespace: true }, "New  York", "NewYork", 1],
    ["one of several targets", {}, "four", ["4", "four"], 1],
    ["none of several targets", {}, "five", ["4", "four"], 0],
    ["a numeric target", {}, "42", 42, 1],
    ["a JSON output", {}, { a: 1 }, '{"a":1}', 1],
  ])("%s", async (_, options, output, target, expected) => {
    expect(await score(options, output, target)).toMatchObject({
      scorer: "exact",
      value: expected,
    });
  });

  it.each<[string, Json | undefined]>([
    ["no target", undefined],
    ["an object target", { a: 1 }],
    ["an empty target list", []],
  ])("throws on %s", async (_, target) => {
    const scorer = exact();
    const sample = target === undefined ? { id: "s", input: "q" } : { id: "s", input: "q", target };
    expect(() => scorer.score({ sample, output: "x", ctx })).toThrow(/exact/);
  });
});
