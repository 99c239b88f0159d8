import { describe, expect, it } from "vitest";
import type { ScorerArgs } from "../core/eval.js";
import { isStetError } from "../core/errors.js";
import { custom } from "./custom.js";
import { toScorer } from "./normalize.js";
import { solverContext } from "../../test/helpers/solver-context.js";

const ctx = solverContext();

describe("toScorer", () => {
  it("names a plain function after itself", async () => {
    function correctness({ output }: ScorerArgs) {
      return output === "4";
    }
    const scorer = toScorer(correctness);
    expect(scorer.name).toBe("correctness");
    expect(await scorer.score({ sample: { id: "s", input: "" }, output: "4", ctx })).toBe(true);
  });

  it("refuses an anonymous function and points at scorers.custom", () => {
    let error: unknown;
    try {
      toScorer([() => 1][0] as () => number);
    } catch (e) {
      error = e;
    }
    expect(isStetError(error, "E_CONFIG")).toBe(true);
    expect((error as Error).message).toContain("scorers.custom(");
  });

  it("passes a Scorer through", () => {
    const scorer = custom("short", ({ output }) => String(output).length < 5);
    expect(toScorer(scorer)).toBe(scorer);
  });

  it.each([[""], ["  "]])("custom refuses the name %j", (name) => {
    expect(() => custom(name, () => 1)).toThrow(/non-empty name/);
  });
});
