import { closedPort } from "../../test/helpers/closed-port.js";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type { SolverContext } from "../core/eval.js";
import type { Sample } from "../core/types.js";
import { startMockOpenAI } from "../../test/helpers/mock-openai.js";
import type { MockOpenAI, MockOpenAIOptions } from "../../test/helpers/mock-openai.js";
import { chat } from "./chat.js";
import type { ChatSolverOptions } from "./chat.js";
import { SolverError } from "./solver-error.js";
import { solverContext } from "../../test/helpers/solver-context.js";

const KEY = "sk-test-do-not-leak-1234567890";
const tiny = { initialMs: 1, maxMs: 5, retryAfterCapMs: 5_000 };
/**
 * "At once", for a wait that would otherwise last a minute or an hour (a Retry-After, a backoff
 * of 60 s, a request that hangs): far from both, so a loaded machine cannot break it.
 */
const LONG_BEFORE_MS = 30_000;
const sample = (input: Sample["input"], id = "s1"): Sample => ({ id, input });
const context = (signal = new AbortController().signal, model?: string): SolverContext =>
  solverContext({ runId: "run-1", signal, ...(model === undefined ? {} : { model }) });

let mock: MockOpenAI;
let scripted: MockOpenAIOptions["respond"];

beforeAll(async () => {
  mock = await startMockOpenAI({ respond: (request) => scripted?.(request) });
});
afterEach(() => {
  scripted = undefined;
  mock.reset();
});
afterAll(() => mock.close());

const solver = (options: Partial<ChatSolverOptions> = {}) =>
  chat({ model: "openai:gpt-4o-mini", baseURL: mock.url, apiKey: KEY, backoff: tiny, ...options });

async function failure(promise: Promise<unknown>): Promise<SolverError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(SolverError);
  return error as SolverError;
}

describe("solvers.chat", () => {
  it("returns the reply with usage, cost and a transcript", async () => {
    const result = await solver({ system: "Be brief." })(sample("2+2?"), context());
    expect(result).toEqual({
      output: "2+2?",
      usage: { inputTokens: 10, outputTokens: 5, costUsd: (10 * 0.15 + 5 * 0.6) / 1e6 },
      transcript: [
        { role: "system", content: "Be brief." },
        { role: "user", content: "2+2?" },
        { role: "assistant", content: "2+2?" },
      ],
    });
    expect(mock.requests[0]?.body).toMatchObject({ model: "gpt-4o-mini" });
    expect(mock.requests[0]?.headers.authorization).toBe(`Bearer ${KEY}`);
  });

  it("prefers the run's --model, and omits the cost of an unknown model", async () => {
    const result = await solver()(sample("hi"), context(undefined, "vllm:my-local-model"));
    expect(mock.requests[0]?.body).toMatchObject({ model: "my-local-model" });
    expect(result).toMatchObject({ usage: { inputTokens: 10, outputTokens: 5 } });
    expect((result as { usage: object }).usage).not.toHaveProperty("costUsd");
  });

  it("uses an explicit price table over the built-in one", async () => {
    const result = await solver({ prices: { input: 1, output: 2 } })(sample("hi"), context());
    expect(result).toMatchObject({ usage: { costUsd: (10 * 1 + 5 * 2) / 1e6 } });
  });

  it("sends chat-message inputs as given, without adding a second system message", async () => {
    const messages = [
      { role: "system", content: "You are terse." },
      { role: "user", content: "capital of France?" },
    ];
    await solver({ system: "ignored", temperature: 0, maxTokens: 7 })(sample(messages), context());
    expect(mock.requests[0]?.body).toMatchObject({ messages, temperature: 0, max_tokens: 7 });
  });

  it("sends max_completion_tokens to OpenAI reasoning models", async () => {
    await solver({ model: "o3-mini", maxTokens: 9 })(sample("hi"), context());
    expect(mock.requests[0]?.body).toMatchObject({ max_completion_tokens: 9 });
  });

  it("refuses an input that is neither a string nor messages", async () => {
    const error = await failure(Promise.resolve(solver()(sample({ q: 1 }), context())));
    expect(error.type).toBe("solver");
    expect(mock.requests).toHaveLength(0);
  });

  it.each([
    ["a 500", { status: 500 }],
    ["a 503", { status: 503 }],
    ["a dropped connection", { drop: true as const }],
  ])("retries after %s and then succeeds", async (_, action) => {
    scripted = ({ n }) => (n === 1 ? action : undefined);
    const result = await solver()(sample("retry me"), context());
    expect(result).toMatchObject({ output: "retry me" });
    expect(mock.counts()).toEqual({ "retry me": 2 });
  });

  it("honours Retry-After on a 429", async () => {
    scripted = ({ n }) => (n === 1 ? { status: 429, retryAfter: 1 } : undefined);
    const started = Date.now();
    await solver()(sample("slow down"), context());
    expect(Date.now() - started).toBeGreaterThanOrEqual(950);
    expect(mock.counts()).toEqual({ "slow down": 2 });
  });

  it("caps a long Retry-After", async () => {
    scripted = ({ n }) => (n === 1 ? { status: 429, retryAfter: 3600 } : undefined);
    const started = Date.now();
    await solver({ backoff: { ...tiny, retryAfterCapMs: 20 } })(sample("capped"), context());
    expect(Date.now() - started).toBeLessThan(LONG_BEFORE_MS);
    expect(mock.counts()).toEqual({ capped: 2 });
  });

  it("gives up after maxRetries with a provider error naming the endpoint and status", async () => {
    scripted = () => ({ status: 500 });
    const error = await failure(
      Promise.resolve(solver({ maxRetries: 3 })(sample("doomed"), context())),
    );
    expect(error).toMatchObject({ type: "provider", status: 500 });
    expect(error.message).toContain(`${mock.url}/chat/completions`);
    expect(error.message).toContain("HTTP 500");
    expect(error.message).toContain("after 4 attempts");
    expect(mock.counts()).toEqual({ doomed: 4 });
  });

  it("tells ctx.onRetry of each re-sent request, also when the call fails in the end; never of the first", async () => {
    let told = 0;
    const counting = { ...context(), onRetry: () => void told++ };
    scripted = ({ n }) => (n <= 2 ? { status: n === 1 ? 500 : 429 } : undefined);
    await solver()(sample("twice"), counting);
    expect([told, mock.counts()]).toEqual([2, { twice: 3 }]);
    told = 0;
    scripted = () => ({ status: 503 });
    await failure(Promise.resolve(solver({ maxRetries: 2 })(sample("doomed"), counting)));
    expect([told, mock.counts().doomed]).toEqual([2, 3]);
    told = 0;
    scripted = () => ({ status: 401 });
    await failure(Promise.resolve(solver()(sample("refused"), counting)));
    expect(told).toBe(0);
  });

  it.each([400, 401, 404, 422])("does not retry a %i", async (status) => {
    scripted = () => ({ status });
    const error = await failure(Promise.resolve(solver()(sample("bad"), context())));
    expect(error).toMatchObject({ type: "provider", status });
    expect(mock.counts()).toEqual({ bad: 1 });
  });

  it.each([401, 403, 404])(
    "marks a %i as a configuration fault, with the status and what the server said",
    async (status) => {
      scripted = () => ({ status, body: { error: { message: "Incorrect API key provided" } } });
      const error = await failure(Promise.resolve(solver()(sample("bad"), context())));
      expect(error.configuration).toEqual({
        cause: "http-status",
        url: `${mock.url}/chat/completions`,
        status,
      });
      expect(error.message).toContain(`HTTP ${status}: Incorrect API key provided`);
    },
  );

  it.each([
    ["a 400", { status: 400 }],
    ["a 422", { status: 422 }],
    ["a 500 after its retries", { status: 500 }],
    ["a 429 after its retries", { status: 429 }],
  ])("does not mark %s as a configuration fault", async (_, action) => {
    scripted = () => action;
    const error = await failure(
      Promise.resolve(solver({ maxRetries: 1 })(sample("odd"), context())),
    );
    expect(error.type).toBe("provider");
    expect(error.configuration).toBeUndefined();
  });

  it("keeps retrying a dropped connection, and does not call it a configuration fault", async () => {
    scripted = () => ({ drop: true });
    const error = await failure(
      Promise.resolve(solver({ maxRetries: 2 })(sample("dropped"), context())),
    );
    expect(error.configuration).toBeUndefined();
    expect(error.message).toContain("network error");
    expect(mock.counts()).toEqual({ dropped: 3 });
  });

  it("never puts the key in an error, even when the server echoes it", async () => {
    scripted = () => ({ status: 401, body: { error: { message: `Incorrect API key: ${KEY}` } } });
    const error = await failure(Promise.resolve(solver()(sample("who am i"), context())));
    expect(error.message).toContain("Incorrect API key: ***");
    expect(error.message).not.toContain(KEY);
  });

  it("times out a request that hangs, retries, and reports a timeout when it keeps hanging", async () => {
    scripted = ({ n }) => (n === 1 ? { hang: true } : undefined);
    await expect(solver({ timeoutMs: 100 })(sample("hang once"), context())).resolves.toMatchObject(
      {
        output: "hang once",
      },
    );
    scripted = () => ({ hang: true });
    const error = await failure(
      Promise.resolve(solver({ timeoutMs: 50, maxRetries: 1 })(sample("hang"), context())),
    );
    expect(error.type).toBe("timeout");
    expect(mock.counts()).toMatchObject({ hang: 2 });
  });

  it("stops at once when aborted during a backoff sleep", async () => {
    const controller = new AbortController();
    scripted = () => {
      setTimeout(() => controller.abort(new Error("stop now")), 50);
      return { status: 503 };
    };
    const started = Date.now();
    const slow = { initialMs: 60_000, maxMs: 60_000, retryAfterCapMs: 60_000 };
    await expect(
      solver({ backoff: slow })(sample("abort me"), context(controller.signal)),
    ).rejects.toThrow("stop now");
    expect(Date.now() - started).toBeLessThan(LONG_BEFORE_MS);
    expect(mock.counts()).toEqual({ "abort me": 1 });
  });

  it("stops at once when aborted during a request", async () => {
    const controller = new AbortController();
    scripted = () => {
      setTimeout(() => controller.abort(), 50);
      return { hang: true };
    };
    const started = Date.now();
    await expect(solver()(sample("in flight"), context(controller.signal))).rejects.toThrow(
      /abort/i,
    );
    expect(Date.now() - started).toBeLessThan(LONG_BEFORE_MS);
  });

  it("rejects without a request when already aborted", async () => {
    const controller = new AbortController();
    controller.abort();
    await expect(solver()(sample("never"), context(controller.signal))).rejects.toThrow();
    expect(mock.requests).toHaveLength(0);
  });
});

describe("solvers.chat against an endpoint that is not there", () => {
  // Backoff this slow: a retry would wait up to a minute (at random); the messages say there was
  // none ("after <n> attempts" when there were).
  const slow = { initialMs: 60_000, maxMs: 60_000, retryAfterCapMs: 60_000 };

  it("fails at once on a refused connection, saying so with the URL", async () => {
    const port = await closedPort();
    const baseURL = `http://127.0.0.1:${port}/v1`;
    const error = await failure(
      Promise.resolve(solver({ baseURL, backoff: slow })(sample("anyone?"), context())),
    );
    expect(error).toMatchObject({
      type: "provider",
      configuration: { cause: "connection-refused", url: `${baseURL}/chat/completions` },
    });
    expect(error.status).toBeUndefined();
    expect(error.message).toContain(`POST ${baseURL}/chat/completions`);
    expect(error.message).toContain("connection refused");
    expect(error.message).not.toContain("attempts");
  });

  it("fails at once on a host that does not resolve, saying so with the URL", async () => {
    const baseURL = "http://stet-no-such-host.invalid/v1";
    const error = await failure(
      Promise.resolve(solver({ baseURL, backoff: slow })(sample("anyone?"), context())),
    );
    expect(error).toMatchObject({
      type: "provider",
      configuration: { cause: "host-not-found", url: `${baseURL}/chat/completions` },
    });
    expect(error.message).toContain("host not found: stet-no-such-host.invalid");
    expect(error.message).not.toContain("attempts");
  });

  it.each(["", "api.example.com/v1", "ftp://example.com/v1"])(
    "fails at once, sending nothing, on a base URL %j that is not http(s)",
    async (baseURL) => {
      const error = await failure(
        Promise.resolve(solver({ baseURL, backoff: slow })(sample("anyone?"), context())),
      );
      expect(error).toMatchObject({ type: "provider", configuration: { cause: "invalid-url" } });
      expect(error.message).not.toContain("attempts");
      expect(error.message).toContain(`the base URL ${JSON.stringify(baseURL)} is not an http`);
    },
  );
});

describe("solvers.chat configuration", () => {
  const saved = { ...process.env };
  afterEach(() => {
    process.env = { ...saved };
  });

  it("describes itself without the key or header values", () => {
    const described = solver({ headers: { "x-api-key": "hdr-secret" } }).describe?.();
    expect(described).toMatchObject({
      kind: "chat",
      model: "gpt-4o-mini",
      baseURL: mock.url,
      apiKeyEnv: "explicit",
      headers: ["x-api-key"],
    });
    expect(JSON.stringify(described)).not.toContain(KEY);
    expect(JSON.stringify(described)).not.toContain("hdr-secret");
  });

  it("takes the key and base URL from the environment", async () => {
    process.env.OPENAI_API_KEY = "sk-from-env-0987654321";
    process.env.OPENAI_BASE_URL = `${mock.url}/`;
    const fromEnv = chat({ model: "gpt-4o-mini" });
    await fromEnv(sample("env"), context());
    expect(mock.requests[0]?.headers.authorization).toBe("Bearer sk-from-env-0987654321");
    const described = fromEnv.describe?.();
    expect(described).toMatchObject({ apiKeyEnv: "OPENAI_API_KEY", baseURL: mock.url });
    expect(JSON.stringify(described)).not.toContain("sk-from-env");
  });

  it("sends no Authorization header when there is no key", async () => {
    delete process.env.OPENAI_API_KEY;
    await chat({ model: "llama3:8b", baseURL: mock.url })(sample("local"), context());
    expect(mock.requests[0]?.headers.authorization).toBeUndefined();
    expect(mock.requests[0]?.body).toMatchObject({ model: "llama3:8b" });
  });

  it("redacts credentials in the base URL", () => {
    const described = chat({ model: "m", baseURL: "https://user:pw@example.com/v1" }).describe?.();
    expect(described?.baseURL).toBe("https://***@example.com/v1");
  });
});
