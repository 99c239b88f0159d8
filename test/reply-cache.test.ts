import { afterEach, describe, expect, it } from "vitest";
import { runCli } from "./helpers/cli.js";
import { expectNoKeysInStore, perTest } from "./helpers/eval-project.js";
import { startMockOpenAI, type MockOpenAI } from "./helpers/mock-openai.js";

// The reply cache across runs: a call made before, to the same endpoint with the same key, model,
// messages and parameters (and in the same epoch), is served from the store, counted as reused.

const N = 20;
const KEY_A = "sk-cache-test-key-a-0123456789";
const KEY_B = "sk-cache-test-key-b-9876543210";

/** An eval of N chat calls; `name` differs, the calls do not (unless `temperature` does). */
function evalText(name: string, extra = "cache: true", temperature = 0): string {
  return `import { defineEval, solvers, scorers } from "stet";
export default defineEval({
  name: "${name}",
  dataset: Array.from({ length: ${N} }, (_, i) => ({ id: "q" + i, input: "question " + i, target: "question " + i })),
  solver: solvers.chat({ model: "gpt-test", baseURL: process.env.MOCK_URL, maxRetries: 0, temperature: ${temperature} }),
  scorers: [scorers.exact()],
  concurrency: 4,
  ${extra},
});
`;
}

const { project } = perTest();
const mocks: MockOpenAI[] = [];
afterEach(async () => {
  while (mocks.length) await mocks.pop()!.close();
});

async function mockServer(options: Parameters<typeof startMockOpenAI>[0] = {}) {
  const mock = await startMockOpenAI(options);
  mocks.push(mock);
  return mock;
}

interface RunJson {
  runId: string;
  usage: { spentNow: { inputTokens: number; costUsd?: number }; reused: { inputTokens: number } };
}

async function run(dir: string, file: string, env: Record<string, string>, flags: string[] = []) {
  const result = await runCli(["run", file, "--json", ...flags], { cwd: dir, env });
  expect(result.code, result.stderr).toBe(0);
  return JSON.parse(result.stdout) as RunJson;
}

describe("the reply cache", () => {
  it("serves a second eval's identical calls from the store, never across keys, endpoints or changed calls", async () => {
    const mock = await mockServer();
    const dir = project({
      "a.mjs": evalText("a"),
      "b.mjs": evalText("b"),
      "c.mjs": evalText("c", "cache: true", 0.5),
    }).dir;
    const env = { MOCK_URL: mock.url, OPENAI_API_KEY: KEY_A };
    const first = await run(dir, "a.mjs", env);
    expect(mock.requests).toHaveLength(N);
    expect(first.usage.spentNow.inputTokens).toBe(N * 10);

    const second = await run(dir, "b.mjs", env);
    expect(mock.requests).toHaveLength(N); // none sent
    expect(second.usage.spentNow.inputTokens).toBe(0);
    expect(second.usage.reused.inputTokens).toBe(N * 10);

    // Another key: no reply is served across credentials.
    await run(dir, "b.mjs", { ...env, OPENAI_API_KEY: KEY_B });
    expect(mock.requests).toHaveLength(2 * N);
    // Another endpoint (the same server under another name): asked again.
    await run(dir, "b.mjs", { ...env, MOCK_URL: mock.url.replace("127.0.0.1", "localhost") });
    expect(mock.requests).toHaveLength(3 * N);
    // Another parameter: another call.
    await run(dir, "c.mjs", env);
    expect(mock.requests).toHaveLength(4 * N);
    // --no-cache sends everything.
    await run(dir, "b.mjs", env, ["--no-cache"]);
    expect(mock.requests).toHaveLength(5 * N);

    // No key, in any form, in the store's files.
    expectNoKeysInStore(dir, [KEY_A, KEY_B]);
  });

  it("caches ctx.chat calls too, keyed by the call's own key, which the store never holds", async () => {
    // "b" is answered with the key echoed: that reply is not stored (the cache keeps no secret).
    const mock = await mockServer({
      reply: ({ key, headers }) => (key === "b" ? `b ${String(headers.authorization)}` : key),
    });
    const own = "sk-cache-ctx-chat-own-key-42";
    const text = (name: string, key: string) => `import { defineEval, scorers } from "stet";
export default defineEval({
  name: "${name}",
  dataset: [{ id: "a", input: "a", target: "a" }, { id: "b", input: "b", target: "b" }],
  solver: async (sample, ctx) => {
    const reply = await ctx.chat({ model: "gpt-test", baseURL: process.env.MOCK_URL, apiKey: "${key}",
      maxRetries: 0, messages: [{ role: "user", content: sample.input }] });
    return reply.content;
  },
  scorers: [scorers.exact()],
  cache: true,
});
`;
    const dir = project({
      "a.mjs": text("a", own),
      "b.mjs": text("b", own),
      "c.mjs": text("c", own + "-other"),
    }).dir;
    const env = { MOCK_URL: mock.url, OPENAI_API_KEY: "" };
    await run(dir, "a.mjs", env);
    expect(mock.requests).toHaveLength(2);
    const second = await run(dir, "b.mjs", env);
    expect(mock.counts()).toEqual({ a: 1, b: 2 });
    expect(second.usage.spentNow.inputTokens).toBe(10);
    await run(dir, "c.mjs", env);
    expect(mock.requests).toHaveLength(5);
    expectNoKeysInStore(dir, [own]);
  });

  it("samples each epoch on its own by default, and shares one reply with perEpoch: false", async () => {
    const mock = await mockServer();
    const dir = project({
      "e.mjs": evalText("e", "epochs: 3, cache: true"),
      "f.mjs": evalText("f", "epochs: 3, cache: { perEpoch: false }"),
    }).dir;
    const env = { MOCK_URL: mock.url, OPENAI_API_KEY: KEY_A };
    await run(dir, "e.mjs", env);
    expect(mock.requests).toHaveLength(3 * N);
    await run(dir, "e.mjs", env);
    expect(mock.requests).toHaveLength(3 * N);
    await run(dir, "f.mjs", env);
    expect(mock.requests).toHaveLength(4 * N);
  });

  it("never stores an error or a refusal: they are asked again", async () => {
    // q0 fails once (500, not retried), q1 is refused once; both answer on their second request.
    const mock = await mockServer({
      respond: ({ key, n }) => {
        if (key === "question 0" && n === 1) return { status: 500, body: "down" };
        if (key === "question 1" && n === 1)
          return {
            message: { role: "assistant", content: null, refusal: "no" },
            finishReason: "stop",
          };
        return undefined;
      },
    });
    const dir = project({ "a.mjs": evalText("a"), "b.mjs": evalText("b") }).dir;
    const env = { MOCK_URL: mock.url, OPENAI_API_KEY: KEY_A };
    const first = await runCli(["run", "a.mjs", "--json"], { cwd: dir, env });
    expect(first.code, first.stderr).toBe(3); // q0 errored
    expect(mock.requests).toHaveLength(N);
    await runCli(["run", "b.mjs", "--json"], { cwd: dir, env });
    expect(mock.counts()).toMatchObject({ "question 0": 2, "question 1": 2, "question 2": 1 });
    expect(mock.requests).toHaveLength(N + 2);
  });
});
