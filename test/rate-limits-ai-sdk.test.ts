import { afterEach, describe, expect, it } from "vitest";
import { runCli } from "./helpers/cli.js";
import { perTest, withAiSdk } from "./helpers/eval-project.js";
import {
  startRateLimitedServer,
  type RateLimitedOptions,
  type RateLimitedServer,
} from "./helpers/rate-limited-server.js";

// AI SDK models go through the run's rate limits as stet's own providers do: a declared budget,
// the endpoint's headers, the pause after a 429, the learned rate and the figures. The local
// server enforces its limit per API key in OpenAI's chat-completions and Anthropic's Messages
// formats (6 s windows: "RPM" ten times faster); only counts are asserted.

const KEY = "sk-ai-sdk-rate-0123456789abcdef";
const WINDOW_MS = 6000;

const { project } = perTest();
/** A user project that installed the AI SDK. */
const aiProject = (files: Record<string, string>) => withAiSdk(project(files));

const servers: RateLimitedServer[] = [];
afterEach(async () => {
  while (servers.length) await servers.pop()!.close();
});
async function server(options: RateLimitedOptions): Promise<RateLimitedServer> {
  const started = await startRateLimitedServer(options);
  servers.push(started);
  return started;
}

interface ShowJson {
  counts: { scored: number; errored: number };
  rateLimits?: { endpoint: string; requests: number; throttled: number; rejected: number }[];
}

async function runAndShow(dir: string, env: Record<string, string>): Promise<ShowJson> {
  const run = await runCli(["run", "e.mjs", "--json"], { cwd: dir, env });
  expect(run.code, run.stderr).toBe(0);
  const { runId } = JSON.parse(run.stdout) as { runId: string };
  const show = await runCli(["show", runId, "--json"], { cwd: dir, env });
  expect(show.code, show.stderr).toBe(0);
  return JSON.parse(show.stdout) as ShowJson;
}

/** `show`'s figures name one budget, at `endpoint` and a key's hash, counting every request. */
function expectOneBudget(shown: ShowJson, endpoint: string, counts: { requests: number }): void {
  expect(shown.rateLimits).toEqual([
    expect.objectContaining({
      endpoint: expect.stringMatching(new RegExp(`^${endpoint} key:[0-9a-f]{16}$`)) as string,
      requests: counts.requests,
    }),
  ]);
}

const dataset = (n: number) =>
  `Array.from({ length: ${n} }, (_, i) => ({ id: "q" + i, input: "question " + i, target: "ok" }))`;

/** An eval of `n` samples whose solver calls `generateText` on `ctx.languageModel(…)` of `provider`. */
function generateTextEval(name: string, n: number, provider: "openai" | "anthropic"): string {
  // Each provider's factory, its options, and the model the solver asks of it.
  const [factory, options, model] =
    provider === "openai"
      ? [
          "createOpenAI",
          "{ baseURL: process.env.MOCK_URL, apiKey: process.env.AI_KEY }",
          'openai.chat("gpt-test")',
        ]
      : [
          "createAnthropic",
          '{ baseURL: process.env.MOCK_URL + "/v1", apiKey: process.env.AI_KEY }',
          'anthropic("claude-test")',
        ];
  return `import { ${factory} } from "@ai-sdk/${provider}";
import { generateText } from "ai";
import { defineEval, scorers } from "stet";
const ${provider} = ${factory}(${options});
export default defineEval({
  name: "${name}",
  dataset: ${dataset(n)},
  solver: async (sample, ctx) => {
    const { text } = await generateText({
      model: ctx.languageModel(${model}),
      prompt: sample.input,
      maxOutputTokens: 5,
      maxRetries: 0,
    });
    return text;
  },
  scorers: [scorers.exact()],
  concurrency: 64,
});
`;
}

describe("AI SDK models under the rate limits", () => {
  it("solvers.chat over @ai-sdk/openai at concurrency 64 under a declared 600 RPM: no errors, ≤ 1 % 429s, the window kept", async () => {
    const perWindow = 600;
    const mock = await server({ rpm: perWindow, windowMs: WINDOW_MS });
    const dir = aiProject({
      "e.mjs": `import { createOpenAI } from "@ai-sdk/openai";
import { defineEval, scorers, solvers } from "stet";
const openai = createOpenAI({ baseURL: process.env.MOCK_URL, apiKey: process.env.AI_KEY });
export default defineEval({
  name: "ai-sdk-declared",
  dataset: ${dataset(1000)},
  solver: solvers.chat({ model: openai.chat("gpt-test"), maxTokens: 5, backoff: { initialMs: 50 } }),
  scorers: [scorers.exact()],
  concurrency: 64,
  rateLimits: { "openai:gpt-test": { rpm: ${(perWindow * 60_000) / WINDOW_MS}, windowMs: ${WINDOW_MS} } },
});
`,
    }).dir;
    const shown = await runAndShow(dir, { MOCK_URL: mock.url, AI_KEY: KEY });
    const counts = mock.counts();
    console.log(JSON.stringify({ ...counts, admittedAt: undefined }), JSON.stringify(shown));
    expect(shown.counts).toMatchObject({ scored: 1000, errored: 0 });
    expect(counts.rejected).toBeLessThanOrEqual(counts.requests / 100);
    expect(counts.maxRequestsInWindow).toBeLessThanOrEqual(perWindow * 1.01);
    // Its figures, under the endpoint the provider package is configured with, and its key.
    expectOneBudget(shown, `openai:gpt-test@${mock.url}`, counts);
    expect(shown.rateLimits![0]!.rejected).toBe(counts.rejected);
    expect(shown.rateLimits![0]!.throttled).toBeGreaterThan(0);
  }, 180_000);

  it("ctx.languageModel over @ai-sdk/anthropic in generateText, no declared limit: paced by the endpoint's headers", async () => {
    // 100 requests per 6 s and 300 samples at concurrency 64: three windows' worth. Unpaced,
    // every request over the window is a 429, each retried by backoff alone until it fits.
    const perWindow = 100;
    const mock = await server({ rpm: perWindow, windowMs: WINDOW_MS });
    const dir = aiProject({
      "e.mjs": generateTextEval("ai-sdk-agent-headers", 300, "anthropic"),
    }).dir;
    const shown = await runAndShow(dir, { MOCK_URL: mock.anthropicUrl, AI_KEY: KEY });
    const counts = mock.counts();
    console.log(JSON.stringify({ ...counts, admittedAt: undefined }), JSON.stringify(shown));
    expect(shown.counts).toMatchObject({ scored: 300, errored: 0 });
    // Paced by what the answers say is left (less what is in flight), as stet's own requests are:
    // the 429s are counted, not the window (answers come back out of order on a loaded machine).
    // Unpaced, 128 of ~430 are refused. Anthropic's reset is a time, read past already when an
    // answer comes late: each such answer used to let one request go over the window while newer
    // answers were on their way (0 to 12 of ~300 refused at load 2-5, 29 of 329 once in CI);
    // now the gate waits for them (0 of 300 in twelve runs at load 4-5).
    expect(counts.rejected).toBeLessThanOrEqual(counts.requests / 100);
    // Without the package's `/v1`: the endpoint as stet's own Anthropic provider names it.
    expectOneBudget(shown, `anthropic:claude-test@${mock.anthropicUrl}`, counts);
    expect(shown.rateLimits![0]!.rejected).toBe(counts.rejected);
    expect(shown.rateLimits![0]!.throttled).toBeGreaterThan(0);
  }, 180_000);

  it("an AI SDK model and stet's own provider sending one key share its declared budget", async () => {
    // Each sample calls the endpoint twice with the same key: once through @ai-sdk/openai, once
    // through ctx.chat. Before, they were two budgets (two endpoints in `show`), each allowed the
    // whole limit.
    const perWindow = 150;
    const mock = await server({ rpm: perWindow, windowMs: WINDOW_MS });
    const dir = aiProject({
      "e.mjs": `import { createOpenAI } from "@ai-sdk/openai";
import { generateText } from "ai";
import { defineEval, scorers } from "stet";
const openai = createOpenAI({ baseURL: process.env.MOCK_URL, apiKey: process.env.AI_KEY });
export default defineEval({
  name: "ai-sdk-and-own-one-key",
  dataset: ${dataset(150)},
  solver: async (sample, ctx) => {
    await generateText({
      model: ctx.languageModel(openai.chat("gpt-test")),
      prompt: sample.input,
      maxOutputTokens: 5,
      maxRetries: 0,
    });
    const messages = [{ role: "user", content: sample.input }];
    const reply = await ctx.chat({ model: "gpt-test", baseURL: process.env.MOCK_URL, apiKey: process.env.AI_KEY, messages, maxTokens: 5 });
    return reply.content;
  },
  scorers: [scorers.exact()],
  concurrency: 64,
  rateLimits: { "openai:gpt-test": { rpm: ${(perWindow * 60_000) / WINDOW_MS}, windowMs: ${WINDOW_MS} } },
});
`,
    }).dir;
    const shown = await runAndShow(dir, { MOCK_URL: mock.url, AI_KEY: KEY });
    const counts = mock.counts();
    console.log(JSON.stringify({ ...counts, admittedAt: undefined }), JSON.stringify(shown));
    expect(shown.counts).toMatchObject({ scored: 150, errored: 0 });
    // One budget, named once, counting both clients' requests.
    expectOneBudget(shown, `openai:gpt-test@${mock.url}`, counts);
    // At 150 a window, 1 % is one request: one more on a loaded machine, as the shared case allows.
    expect(counts.maxRequestsInWindow).toBeLessThanOrEqual(perWindow * 1.01 + 1);
    expect(counts.rejected).toBeLessThanOrEqual(counts.requests / 100);
  }, 180_000);

  it("ctx.languageModel over @ai-sdk/openai, no declared limit and no rate-limit headers: the 429s pause the endpoint and teach it a rate, and fail no sample", async () => {
    // 100 requests per 6 s, 429 and retry-after only, 400 samples at concurrency 64. The first
    // window's fill refuses what is in flight (≤ 64); then the pause and the learned rate. Retried
    // by backoff alone, each request refused spent one of the call's retries.
    const perWindow = 100;
    const mock = await server({ rpm: perWindow, windowMs: WINDOW_MS, headers: false });
    const dir = aiProject({
      "e.mjs": generateTextEval("ai-sdk-agent-429s", 400, "openai"),
    }).dir;
    const shown = await runAndShow(dir, { MOCK_URL: mock.url, AI_KEY: KEY });
    const counts = mock.counts();
    console.log(JSON.stringify({ ...counts, admittedAt: undefined }), JSON.stringify(shown));
    expect(shown.counts).toMatchObject({ scored: 400, errored: 0 });
    expect(counts.rejected).toBeGreaterThan(0);
    expect(counts.rejected).toBeLessThanOrEqual(64 + 16);
    expect(shown.rateLimits).toEqual([
      expect.objectContaining({ requests: counts.requests, rejected: counts.rejected }),
    ]);
  }, 180_000);
});
