import { describe, expect, it } from "vitest";
import type { Json } from "../core/json.js";
import { includes } from "./includes.js";
import type { IncludesOptions } from "./includes.js";
import { normalizeScore } from "../core/normalize.js";
import { solverContext } from "../../test/helpers/solver-context.js";

const ctx = solverContext();

describe("scorers.includes", () => {
  it.each<[string, IncludesOptions, Json, Json, number, string | undefined]>([
    ["target inside", {}, "The capital is Paris.", "Paris", 1, "Paris"],
    ["target absent", {}, "The capital is Lyon.", "Paris", 0, undefined],
    ["case differs", {}, "the capital is paris", "Paris", 0, undefined],
    ["case differs, insensitive", { caseSensitive: false }, "PARIS!", "paris", 1, "paris"],
    ["any of several targets", {}, "It is 4.", ["four", "4"], 1, "4"],
    ["a fixed substring", { substring: "done" }, "all done", "ignored", 1, "done"],
    ["a JSON output", {}, { city: "Paris" }, "Paris", 1, "Paris"],
  ])("%s", async (_, options, output, target, value, answer) => {
    const scorer = includes(options);
    const raw = await scorer.score({ sample: { id: "s", input: "q", target }, output, ctx });
    const result = normalizeScore(scorer.name, raw);
    expect(result).toMatchObject({ scorer: "includes", value });
    expect(result.answer).toBe(answer);
  });
});
