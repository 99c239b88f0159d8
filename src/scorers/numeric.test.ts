import { describe, expect, it } from "vitest";
import type { Json } from "../core/json.js";
import { normalizeScore } from "../core/normalize.js";
import { extractNumber, numeric } from "./numeric.js";
import type { NumericOptions } from "./numeric.js";
import { solverContext } from "../../test/helpers/solver-context.js";

const ctx = solverContext();

describe("scorers.numeric", () => {
  it.each<[string, NumericOptions, Json, Json, number]>([
    ["a bare number", {}, "42", "42", 1],
    ["a wrong number", {}, "41", "42", 0],
    ["the last number in text", {}, "3 apples + 4 apples = 7", 7, 1],
    ["thousands separators", {}, "It costs $1,234.50.", "1234.5", 1],
    ["float noise", {}, String(0.1 + 0.2), 0.3, 1],
    ["absolute tolerance", { tolerance: 0.5 }, "3.4", 3, 1],
    ["outside absolute tolerance", { tolerance: 0.5 }, "3.6", 3, 0],
    ["relative tolerance", { tolerance: 0.01, relative: true }, "1005", 1000, 1],
    ["outside relative tolerance", { tolerance: 0.01, relative: true }, "1011", 1000, 0],
    ["any of several targets", {}, "0.5", [1, "0.5"], 1],
    ["a JSON number output", {}, 12, 12, 1],
    ["no number", {}, "I don't know", 3, 0],
  ])("%s", async (_, options, output, target, value) => {
    const scorer = numeric(options);
    const raw = await scorer.score({ sample: { id: "s", input: "q", target }, output, ctx });
    expect(normalizeScore(scorer.name, raw)).toMatchObject({ scorer: "numeric", value });
  });

  it("throws when the target is not a number", () => {
    const scorer = numeric();
    expect(() =>
      scorer.score({ sample: { id: "s", input: "q", target: "n/a" }, output: "1", ctx }),
    ).toThrow(/not a number/);
  });
});

describe("extractNumber", () => {
  it.each<[Json, number | undefined]>([
    ["-3.5", -3.5],
    ["  +7 ", 7],
    ["1e3", 1000],
    [".5", 0.5],
    ["The answer is 42.", 42],
    ["pages 10-20", 20],
    ["it fell to -4 degrees", -4],
    ["1,2,3", 3],
    ["between 1,000 and 2,500,000 people", 2_500_000],
    ["x = 2.5e-3 m", 0.0025],
    ["no digits", undefined],
    [null, undefined],
  ])("%j → %s", (output, expected) => {
    expect(extractNumber(output)).toBe(expected);
  });
});
