import { afterEach, describe, expect, it } from "vitest";
import { runCli } from "./helpers/cli.js";
import { expectNoKeysInStore, perTest, withAiSdk } from "./helpers/eval-project.js";
import { startMockOpenAI, type MockOpenAI } from "./helpers/mock-openai.js";

// The reply cache across runs for AI SDK models: an @ai-sdk/* provider package's base URL and key
// are read from its config, so its calls are cached as stet's own are (per endpoint and key):
// `solvers.chat` on an AI SDK model, `ctx.languageModel` under `generateText`, and a judge.

const N = 12;
const KEY_A = "sk-ai-sdk-cache-key-a-0123456789";
const KEY_B = "sk-ai-sdk-cache-key-b-9876543210";

const { project } = perTest();
const mocks: MockOpenAI[] = [];
afterEach(async () => {
  while (mocks.length) await mocks.pop()!.close();
});

/** An eval of N samples whose model is an @ai-sdk/openai chat model; `solver` and `scorer` vary. */
function evalText(name: string, solver: string, scorer = "scorers.exact()"): string {
  return `import { createOpenAI } from "@ai-sdk/openai";
import { generateText } from "ai";
import { defineEval, scorers, solvers } from "stet";
const openai = createOpenAI({ baseURL: process.env.MOCK_URL, apiKey: process.env.AI_KEY });
void generateText, solvers;
export default defineEval({
  name: "${name}",
  dataset: Array.from({ length: ${N} }, (_, i) => ({ id: "q" + i, input: "question " + i, target: "question " + i })),
  solver: ${solver},
  scorers: [${scorer}],
  concurrency: 4,
  cache: true,
});
`;
}

const SOLVERS = {
  chat: 'solvers.chat({ model: openai.chat("gpt-test"), maxRetries: 0 })',
  languageModel: `async (sample, ctx) => {
    const { text } = await generateText({ model: ctx.languageModel(openai.chat("gpt-test")), prompt: sample.input, maxRetries: 0 });
    return text;
  }`,
  echo: "async (sample) => sample.input",
};
const JUDGE = 'scorers.modelGraded({ model: openai.chat("judge-test") })';

interface RunJson {
  usage: { spentNow: { inputTokens: number }; reused: { inputTokens: number } };
  metrics: { scorer: string; mean: number | null }[];
}

async function run(dir: string, file: string, key: string, mock: MockOpenAI): Promise<RunJson> {
  const env = { MOCK_URL: mock.url, AI_KEY: key, OPENAI_API_KEY: "" };
  const result = await runCli(["run", file, "--json"], { cwd: dir, env });
  expect(result.code, result.stderr).toBe(0);
  return JSON.parse(result.stdout) as RunJson;
}

describe("the reply cache with AI SDK models", () => {
  it.each([
    ["solvers.chat on an AI SDK model", SOLVERS.chat, undefined],
    ["ctx.languageModel under generateText", SOLVERS.languageModel, undefined],
    ["a judge that is an AI SDK model", SOLVERS.echo, JUDGE],
  ])(
    "%s: a second eval's calls are served from the store, never to another key",
    async (_, solver, scorer) => {
      // A judge's prompt is answered with a grade; every other call with its question.
      const mock = await startMockOpenAI({
        reply: ({ key }) => (key.includes("<submission>") ? "Right.\nGRADE: C" : key),
      });
      mocks.push(mock);
      const dir = withAiSdk(
        project({ "a.mjs": evalText("a", solver, scorer), "b.mjs": evalText("b", solver, scorer) }),
      ).dir;
      const first = await run(dir, "a.mjs", KEY_A, mock);
      expect(mock.requests).toHaveLength(N);
      expect(first.usage.spentNow.inputTokens).toBe(N * 10);
      expect(first.metrics[0]!.mean).toBe(1);

      const second = await run(dir, "b.mjs", KEY_A, mock);
      expect(mock.requests).toHaveLength(N); // none sent
      expect(second.usage.spentNow.inputTokens).toBe(0);
      expect(second.usage.reused.inputTokens).toBe(N * 10);
      expect(second.metrics).toEqual(first.metrics);

      // Another key: nothing served across credentials.
      await run(dir, "b.mjs", KEY_B, mock);
      expect(mock.requests).toHaveLength(2 * N);

      // Neither key, in any form, in the store's files.
      expectNoKeysInStore(dir, [KEY_A, KEY_B]);
    },
  );
});
