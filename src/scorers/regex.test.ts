import { describe, expect, it } from "vitest";
import type { Json } from "../core/json.js";
import { normalizeScore } from "../core/normalize.js";
import { regex } from "./regex.js";
import { solverContext } from "../../test/helpers/solver-context.js";

const ctx = solverContext();

describe("scorers.regex", () => {
  it.each<[string, string | RegExp, string | undefined, Json, number, string | undefined]>([
    ["a string pattern", "^\\d{4}-\\d{2}-\\d{2}$", undefined, "2024-01-31", 1, "2024-01-31"],
    ["no match", "^\\d{4}$", undefined, "year 2024", 0, undefined],
    ["a capture group as answer", /ANSWER: (\w+)/, undefined, "...\nANSWER: B", 1, "B"],
    ["flags", "answer: (b)", "i", "ANSWER: B", 1, "B"],
    ["a RegExp's own flags", /^yes$/im, undefined, "well\nYES\n", 1, "YES"],
  ])("%s", async (_, pattern, flags, output, value, answer) => {
    const scorer = regex(pattern, flags);
    const result = normalizeScore(
      scorer.name,
      await scorer.score({ sample: { id: "s", input: "q" }, output, ctx }),
    );
    expect(result).toMatchObject({ scorer: "regex", value });
    expect(result.answer).toBe(answer);
  });

  it("is stateless with a global pattern", async () => {
    const scorer = regex(/x/g);
    const args = { sample: { id: "s", input: "q" }, output: "x", ctx };
    expect([await scorer.score(args), await scorer.score(args)]).toEqual([
      { value: 1, answer: "x" },
      { value: 1, answer: "x" },
    ]);
  });
});
