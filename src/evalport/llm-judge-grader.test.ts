import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Json } from "../core/json.js";
import { startMockOpenAI, type MockOpenAI } from "../../test/helpers/mock-openai.js";
import { solverContext } from "../../test/helpers/solver-context.js";
import { ScorerError } from "../scorers/scorer-error.js";
import { createGraderRunner } from "./run-grader.js";
import type { SuiteGrader } from "./suite-schema.js";

let mock: MockOpenAI;
let judgeSays = "";
beforeAll(async () => {
  mock = await startMockOpenAI({ reply: () => judgeSays });
});
afterAll(() => mock.close());

const SCHEMA: Record<string, Json> = {
  type: "object",
  properties: { score: { type: "number" }, reason: { type: "string" } },
  required: ["score", "reason"],
};

const judge = (schema?: Record<string, Json>): SuiteGrader => ({
  id: "gr_judge",
  type: "llm_judge",
  params: {
    model: "judge-model",
    prompt: "Does {output} answer {input}? Expected {expected}. Return JSON.",
    ...(schema === undefined ? {} : { schema }),
  },
});

async function verdict(grader: SuiteGrader) {
  const grade = createGraderRunner({ endpoint: { baseURL: mock.url, apiKey: "sk-judge" } });
  const sample = { id: "tc", input: "2+2?", target: "4" };
  return grade(grader, { sample, output: "4", ctx: solverContext() });
}

describe("llm_judge with params.schema", () => {
  it("scores a reply that validates against the schema, fenced or not", async () => {
    judgeSays = '{"score": 0.8, "reason": "right, but terse"}';
    expect(await verdict(judge(SCHEMA))).toMatchObject({ value: 0.8 });
    judgeSays = 'Here you go:\n```json\n{"score": 1, "reason": "correct"}\n```';
    expect(await verdict(judge(SCHEMA))).toMatchObject({ value: 1 });
  });

  it("fails the judge call, naming the violation, when the reply does not match", async () => {
    judgeSays = '{"score": 0.8}';
    await expect(verdict(judge(SCHEMA))).rejects.toThrow(
      /llm_judge "gr_judge": the judge's reply does not match params\.schema: .*reason/,
    );
    judgeSays = "GRADE: C";
    await expect(verdict(judge(SCHEMA))).rejects.toThrow(/does not match params\.schema/);
  });

  it("a reply that does not match still carries what the judge cost", async () => {
    judgeSays = '{"score": 0.8}';
    const thrown = await verdict(judge(SCHEMA)).then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(thrown).toBeInstanceOf(ScorerError);
    expect((thrown as ScorerError).usage).toMatchObject({ inputTokens: 10, outputTokens: 5 });
  });

  it("without a schema, still reads a GRADE line", async () => {
    judgeSays = "Correct.\nGRADE: C";
    expect(await verdict(judge())).toMatchObject({ value: 1 });
  });
});
