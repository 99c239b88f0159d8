import { describe, expect, it } from "vitest";
import type { ModelCaller, Scorer } from "../core/eval.js";
import type { Score } from "../core/types.js";
import { ScorerError } from "../scorers/scorer-error.js";
import { executeScoring, type RescoreUnit } from "./execute-scoring.js";

const record = { sample: { id: "q1", input: "2+2?", target: "4" }, fingerprint: "fp" };

/** A scorer that counts its calls and scores `value`, or throws a paid-for error when null. */
function counted(name: string, value: () => number | null) {
  const calls = { n: 0 };
  const scorer: Scorer = {
    name,
    describe: () => ({ kind: name }),
    score: () => {
      calls.n++;
      const v = value();
      if (v === null) {
        throw new ScorerError(`${name} has no grade`, {
          usage: { inputTokens: 100, outputTokens: 20, costUsd: 0.002 },
        });
      }
      return { value: v, usage: { inputTokens: 100, outputTokens: 20, costUsd: 0.002 } };
    },
  };
  return { scorer, calls };
}

function unit(current: Score[]): RescoreUnit {
  return {
    key: { sampleId: "q1", epoch: 1 },
    attempt: 1,
    record,
    output: "4",
    current,
    rerun: new Set(),
  };
}

const task = (scorers: Scorer[], current: Score[]) => ({
  unit: unit(current),
  scorers,
  pass: "resume-x",
  runId: "r",
  abort: new AbortController().signal,
});

describe("executeScoring", () => {
  it("runs only the scorer whose score is an error; the judge that scored is carried, not bought again", async () => {
    const exact = counted("exact", () => 1);
    const good = counted("good", () => 1);
    let fixed = false;
    const bad = counted("bad", () => (fixed ? 0.5 : null));
    const current: Score[] = [
      { scorer: "exact", value: 1 },
      { scorer: "bad", value: null, error: "bad has no grade" },
      { scorer: "good", value: 1, explanation: "fine" },
    ];
    const scorers = [exact.scorer, bad.scorer, good.scorer];

    const failed = await executeScoring(task(scorers, current));
    expect([exact.calls.n, bad.calls.n, good.calls.n]).toEqual([0, 1, 0]);
    expect(failed).toMatchObject({
      status: "error",
      rescored: ["bad"],
      scores: current,
      error: { type: "scorer", scorer: "bad", message: "bad has no grade" },
      // The failed judge was paid for: the scoring's spend.
      usage: { inputTokens: 100, outputTokens: 20, costUsd: 0.002 },
    });

    fixed = true;
    const scored = await executeScoring(task(scorers, failed.scores));
    expect([exact.calls.n, bad.calls.n, good.calls.n]).toEqual([0, 2, 0]);
    expect(scored).toMatchObject({
      status: "scored",
      rescored: ["bad"],
      scorerConfig: { bad: { kind: "bad" } },
      error: null,
      usage: { inputTokens: 100, outputTokens: 20, costUsd: 0.002 },
    });
    expect(scored.scores.map((s) => [s.scorer, s.value])).toEqual([
      ["exact", 1],
      ["bad", 0.5],
      ["good", 1],
    ]);
  });

  it("a judge's ctx.chat key is blanked in the scoring and named in its redacted", async () => {
    const KEY = "sk-judge-0123456789";
    const callModel: ModelCaller = async (call) => ({ content: `sent ${call.apiKey}`, model: "m" });
    const judge: Scorer = {
      name: "judge",
      score: async ({ ctx }) => {
        const reply = await ctx.chat({ apiKey: KEY, messages: [] });
        if (reply.content.length > 0) throw new Error(`no grade in: ${reply.content}`);
        return 1;
      },
    };
    const scoring = await executeScoring({ ...task([judge], []), callModel });
    expect(JSON.stringify(scoring)).not.toContain(KEY);
    expect(scoring.error?.message).toBe("no grade in: sent [redacted]");
    expect(scoring.redacted).toEqual(["ctx.chat apiKey"]);
  });
});
