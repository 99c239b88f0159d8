import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type { Sample } from "../core/types.js";
import { startMockOpenAI } from "../../test/helpers/mock-openai.js";
import type { MockOpenAI } from "../../test/helpers/mock-openai.js";
import { SolverError } from "../solvers/solver-error.js";
import { modelGraded, parseGrade } from "./model-graded.js";
import { ScorerError } from "./scorer-error.js";
import type { ModelGradedOptions } from "./model-graded.js";
import { normalizeScore } from "../core/normalize.js";
import { solverContext } from "../../test/helpers/solver-context.js";

let mock: MockOpenAI;
let judgeSays = "GRADE: C";

beforeAll(async () => {
  mock = await startMockOpenAI({
    reply: () => judgeSays,
    usage: { prompt_tokens: 1000, completion_tokens: 100 },
  });
});
afterEach(() => mock.reset());
afterAll(() => mock.close());

const sample: Sample = { id: "q1", input: "What is the capital of France?", target: "Paris" };
const ctx = (signal = new AbortController().signal) =>
  solverContext({ signal, model: "model-under-test" });
const judge = (options: Partial<ModelGradedOptions> = {}) =>
  modelGraded({
    model: "openai:gpt-4o",
    baseURL: mock.url,
    apiKey: "sk-judge",
    maxRetries: 0,
    ...options,
  });

describe("scorers.modelGraded", () => {
  it.each<[string, string, number, string]>([
    ["correct", "Matches the reference.\nGRADE: C", 1, "C"],
    ["partial", "Half of it.\nGRADE: P", 0.5, "P"],
    ["incorrect", "Wrong city.\nGRADE: I", 0, "I"],
    ["a number", "Close.\nGRADE: 0.7", 0.7, "0.7"],
    ["lower case and markdown", "ok\n**grade:** c", 1, "C"],
    ["the last grade wins", "Format: GRADE: C, P or I.\nGRADE: I", 0, "I"],
    ["a JSON score", '{"score": 0.8, "reason": "mostly"}', 0.8, "0.8"],
  ])("reads a %s verdict", async (_, reply, value, answer) => {
    judgeSays = reply;
    const scorer = judge();
    const score = normalizeScore(
      scorer.name,
      await scorer.score({ sample, output: "Paris.", ctx: ctx() }),
    );
    expect(score).toMatchObject({
      scorer: "model_graded",
      value,
      answer,
      explanation: reply.trim(),
    });
  });

  it("sends the task, reference, rubric and submission to the judge model, and reports its usage apart", async () => {
    judgeSays = "GRADE: C";
    const scorer = judge({ rubric: "Accept the city name alone." });
    const result = await scorer.score({ sample, output: "It is Paris.", ctx: ctx() });
    const request = mock.requests[0];
    expect(request?.body).toMatchObject({ model: "gpt-4o", temperature: 0, max_tokens: 1024 });
    expect(request?.headers.authorization).toBe("Bearer sk-judge");
    for (const part of [
      "<task>\nWhat is the capital of France?\n</task>",
      "<reference>\nParis\n</reference>",
      "Accept the city name alone.",
      "<submission>\nIt is Paris.\n</submission>",
    ]) {
      expect(request?.key).toContain(part);
    }
    expect(result).toMatchObject({
      metadata: {
        judgeModel: "gpt-4o",
        judgeUsage: {
          inputTokens: 1000,
          outputTokens: 100,
          costUsd: (1000 * 2.5 + 100 * 10) / 1e6,
        },
      },
    });
  });

  it("fills a custom template in one pass", async () => {
    judgeSays = "GRADE: 1";
    const scorer = judge({ template: "Q={input} A={output} E={expected} R={rubric}", rubric: "r" });
    await scorer.score({ sample, output: "{rubric}", ctx: ctx() });
    expect(mock.requests[0]?.key).toBe("Q=What is the capital of France? A={rubric} E=Paris R=r");
  });

  it.each<[string, Sample, string]>([
    [
      "chat messages",
      { id: "s", input: [{ role: "user", content: "hi" }], target: "t" },
      "<task>\nuser: hi\n</task>",
    ],
    [
      "several targets",
      { id: "s", input: "q", target: ["Paris", "Paris, France"] },
      "Any of:\n- Paris\n- Paris, France",
    ],
    [
      "a missing target",
      { id: "s", input: "q" },
      "<reference>\n(no reference answer)\n</reference>",
    ],
  ])("renders %s as text", async (_, sample, expected) => {
    judgeSays = "GRADE: C";
    await judge().score({ sample, output: "o", ctx: ctx() });
    expect(mock.requests[0]?.key).toContain(expected);
  });

  it.each([
    ["no grade", "I think it is fine."],
    ["a grade out of range", "GRADE: 7"],
  ])("throws on %s, with what the judge's reply cost", async (_, reply) => {
    judgeSays = reply;
    const thrown = await Promise.resolve()
      .then(() => judge().score({ sample, output: "Paris", ctx: ctx() }))
      .then(
        () => undefined,
        (error: unknown) => error,
      );
    expect(thrown).toBeInstanceOf(ScorerError);
    expect((thrown as ScorerError).message).toMatch(/^scorer "model_graded": .*(grade|GRADE)/);
    expect((thrown as ScorerError).usage).toEqual({
      inputTokens: 1000,
      outputTokens: 100,
      costUsd: (1000 * 2.5 + 100 * 10) / 1e6,
    });
  });

  it("throws the judge endpoint's SolverError when it fails", async () => {
    const down = modelGraded({ model: "gpt-4o", baseURL: "http://127.0.0.1:9/v1", maxRetries: 0 });
    await expect(down.score({ sample, output: "Paris", ctx: ctx() })).rejects.toBeInstanceOf(
      SolverError,
    );
  });

  it("takes a name", () => {
    expect(judge({ name: "helpfulness" }).name).toBe("helpfulness");
  });
});

describe("parseGrade", () => {
  it.each<[string, { grade: string; value: number } | undefined]>([
    ["GRADE: C", { grade: "C", value: 1 }],
    ["GRADE : .25", { grade: ".25", value: 0.25 }],
    ["GRADE: Correct", undefined],
    ["nothing", undefined],
  ])("%j → %j", (reply, expected) => {
    expect(parseGrade(reply)).toEqual(expected);
  });
});
