import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli } from "./helpers/cli.js";
import { perTest } from "./helpers/eval-project.js";
import { startMockOpenAI, type MockOpenAI } from "./helpers/mock-openai.js";

// The reply cache covers the judge (`scorers.modelGraded`) as it covers `solvers.chat`: the same
// judge call to the same endpoint with the same key is served from the store, counted as reused;
// another key asks again, and an error is never stored.

const N = 6;
const KEY_A = "sk-judge-cache-key-a-0123456789";
const KEY_B = "sk-judge-cache-key-b-9876543210";

/** N samples answered by a function solver (no model call), graded by a judge on the mock. */
function evalText(name: string): string {
  return `import { defineEval, scorers } from "stet";
export default defineEval({
  name: "${name}",
  dataset: Array.from({ length: ${N} }, (_, i) => ({ id: "q" + i, input: "question " + i, target: "answer " + i })),
  solver: async function solve(sample) { return "answer " + sample.id.slice(1); },
  scorers: [scorers.modelGraded({ model: "judge-test", baseURL: process.env.MOCK_URL, maxRetries: 0, prices: { input: 1000, output: 0 } })],
  cache: true,
});
`;
}

let mock: MockOpenAI;
/** Substrings of a judge prompt the mock answers with a 400, or with no grade. */
let failing: string[] = [];
let ungraded: string[] = [];
beforeAll(async () => {
  mock = await startMockOpenAI({
    reply: ({ key }) => (ungraded.some((u) => key.includes(u)) ? "I cannot tell." : "GRADE: C"),
    usage: { prompt_tokens: 10, completion_tokens: 2 },
    respond: ({ key }) =>
      failing.some((f) => key.includes(f))
        ? { status: 400, body: { error: { message: "bad request" } } }
        : undefined,
  });
});
afterAll(() => mock.close());

const { project } = perTest();

interface RunJson {
  counts: { scored: number; errored: number };
  metrics: { scorer: string; mean: number }[];
  usage: { spentNow: { inputTokens: number }; reused: { inputTokens: number } };
}

async function run(dir: string, file: string, key: string, code = 0): Promise<RunJson> {
  const result = await runCli(["run", file, "--json"], {
    cwd: dir,
    env: { MOCK_URL: mock.url, OPENAI_API_KEY: key },
  });
  expect(result.code, result.stderr).toBe(code);
  return JSON.parse(result.stdout) as RunJson;
}

describe("the reply cache and the judge", () => {
  it("serves a judge's call made before from the store, never across keys, and asks an errored one again", async () => {
    const dir = project({ "a.mjs": evalText("a"), "b.mjs": evalText("b") }).dir;

    // The judge fails on one sample and gives no grade on another: 6 requests, 4 grades stored.
    failing = ["question 3"];
    ungraded = ["question 4"];
    const first = await run(dir, "a.mjs", KEY_A, 3);
    expect(mock.requests).toHaveLength(N);
    expect(first.counts).toMatchObject({ scored: N - 2, errored: 2 });
    failing = [];
    ungraded = [];

    // Another eval making the same judge calls: only the two that failed are asked again.
    mock.reset();
    const second = await run(dir, "b.mjs", KEY_A);
    expect(mock.requests.map((r) => r.key.match(/question \d/)?.[0]).sort()).toEqual([
      "question 3",
      "question 4",
    ]);
    expect(second.counts).toMatchObject({ scored: N, errored: 0 });
    expect(second.metrics).toEqual([expect.objectContaining({ scorer: "model_graded", mean: 1 })]);
    expect(second.usage.spentNow.inputTokens).toBe(20);
    expect(second.usage.reused.inputTokens).toBe(10 * (N - 2));

    // The same calls with another key: every one is sent.
    mock.reset();
    const third = await run(dir, "b.mjs", KEY_B);
    expect(mock.requests).toHaveLength(N);
    expect(third.usage.spentNow.inputTokens).toBe(10 * N);
  });
});
