import { describe, expect, it } from "vitest";
import type { Scorer, ScoreValue } from "../core/eval.js";
import type { Usage } from "../core/types.js";
import { ScorerError } from "../scorers/scorer-error.js";
import { SolverError } from "../solvers/solver-error.js";
import { solverContext } from "../../test/helpers/solver-context.js";
import { AttemptTimedOut } from "./attempt-signal.js";
import { scoreOutput } from "./score-output.js";

const sample = { id: "q1", input: "2+2?", target: "4" };
const paid: Usage = { inputTokens: 100, outputTokens: 20, costUsd: 0.001 };

const scorer = (name: string, score: () => ScoreValue | Promise<ScoreValue>): Scorer => ({
  name,
  score,
});
const exact = scorer("exact", () => 1);

async function pass(scorers: Scorer[], signal = new AbortController().signal) {
  return scoreOutput(sample, "4", scorers, solverContext({ signal }), signal);
}

describe("scoreOutput", () => {
  it.each<[string, () => ScoreValue | Promise<ScoreValue>, string, Usage[]]>([
    [
      "a judge that throws after its call (ScorerError)",
      () => {
        throw new ScorerError("no GRADE line", { usage: paid });
      },
      "no GRADE line",
      [paid],
    ],
    [
      "a value out of range that reports usage",
      () => ({ value: 7, usage: paid }),
      'scorer "judge" returned 7; a score is a number in [0, 1] or a boolean',
      [paid],
    ],
    [
      "a thrown object whose usage is not usage",
      () => Promise.reject(Object.assign(new Error("broke"), { usage: { tokens: 3 } })),
      "broke",
      [],
    ],
    [
      "the judge's own request timeout (the attempt's signal still live)",
      () => Promise.reject(new SolverError("timeout", "judge request timed out")),
      "judge request timed out",
      [],
    ],
  ])("%s: its score is an error, the others stand", async (_, score, message, spent) => {
    const result = await pass([exact, scorer("judge", score), scorer("after", () => 0.5)]);
    expect(result.scores).toEqual([
      { scorer: "exact", value: 1 },
      { scorer: "judge", value: null, error: message },
      { scorer: "after", value: 0.5 },
    ]);
    expect(result.error).toEqual({ type: "scorer", scorer: "judge", message });
    expect(result.spent).toEqual(spent);
  });

  it("names every scorer that threw in the attempt's error", async () => {
    const boom = (m: string) => () => Promise.reject(new Error(m));
    const result = await pass([
      scorer("a", boom("a broke")),
      exact,
      scorer("b", boom("b broke")),
      scorer("c", boom("c broke")),
    ]);
    expect(result.scores.map((s) => [s.scorer, s.value, s.error])).toEqual([
      ["a", null, "a broke"],
      ["exact", 1, undefined],
      ["b", null, "b broke"],
      ["c", null, "c broke"],
    ]);
    expect(result.error).toEqual({
      type: "scorer",
      scorer: "a",
      message: "a broke (and 2 more scorers failed: b, c)",
    });
  });

  it("the attempt's timeout ends the pass: a timeout, the scorers after it unscored", async () => {
    const controller = new AbortController();
    const hangs = scorer("judge", () => {
      controller.abort(new AttemptTimedOut("timed out after 5 ms"));
      return new Promise<ScoreValue>(() => {});
    });
    const result = await pass([exact, hangs, scorer("after", () => 1)], controller.signal);
    expect(result.scores).toEqual([{ scorer: "exact", value: 1 }]);
    expect(result.error).toEqual({ type: "timeout", message: "timed out after 5 ms" });
  });
});
