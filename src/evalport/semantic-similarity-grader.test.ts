import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Json } from "../core/json.js";
import { startMockOpenAI, type MockOpenAI } from "../../test/helpers/mock-openai.js";
import { solverContext } from "../../test/helpers/solver-context.js";
import { GRADER_PASSED_KEY } from "./grader-mapping.js";
import { createGraderRunner } from "./run-grader.js";
import { cosine } from "./semantic-similarity-grader.js";
import type { SuiteGrader } from "./suite-schema.js";

let mock: MockOpenAI;
beforeAll(async () => {
  mock = await startMockOpenAI({});
});
afterAll(() => mock.close());

const grader: SuiteGrader = {
  id: "gr_sim",
  type: "semantic_similarity",
  params: { model: "openai:text-embedding-3-small", threshold: 0.85 },
};

function grade(output: Json, target?: string, baseURL = mock.url) {
  const run = createGraderRunner({ endpoint: { baseURL, apiKey: "sk-emb", maxRetries: 0 } });
  const sample = { id: "tc", input: "q", ...(target === undefined ? {} : { target }) };
  return run(grader, { sample, output, ctx: solverContext() });
}

describe("semantic_similarity", () => {
  it("scores the cosine similarity of the two embeddings and passes at the threshold", async () => {
    const same = await grade("Paris is the capital.", "paris is the capital");
    expect(same).toMatchObject({
      value: expect.closeTo(1, 6),
      metadata: { embeddingModel: "text-embedding-3-small", [GRADER_PASSED_KEY]: true },
    });
    const request = mock.requests.at(-1)!;
    expect(request.body).toEqual({
      model: "text-embedding-3-small",
      input: ["Paris is the capital.", "paris is the capital"],
    });

    const far = await grade("xyz", "Paris");
    expect(far).toMatchObject({ value: 0, metadata: { [GRADER_PASSED_KEY]: false } });
  });

  it("cannot grade without an expected output, and throws when the embeddings call fails", async () => {
    expect(await grade("Paris")).toMatchObject({ value: null, skipped: "grader_error" });
    await expect(grade("Paris", "Paris", "http://127.0.0.1:1/v1")).rejects.toThrow(
      /embeddings.*failed: connection refused/,
    );
  });

  it.each([
    [[1, 0], [0, 1], 0],
    [[1, 2], [2, 4], 1],
    [[1, 0], [-1, 0], -1],
    [[0, 0], [1, 1], 0],
    [[1], [1, 1], 0],
  ])("cosine(%j, %j) = %d", (a, b, expected) => {
    expect(cosine(a, b)).toBeCloseTo(expected, 10);
  });
});
