import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { RateGate } from "../core/rate-limits.js";
import { defaultBackoff } from "./backoff.js";
import { Failure, httpFailure, isRetryable, postWithRetries } from "./retrying-post.js";
import type { ResolvedPost } from "./retrying-post.js";
import { SolverError } from "./solver-error.js";
import { startMockOpenAI, type MockOpenAI } from "../../test/helpers/mock-openai.js";

describe("retry verdicts", () => {
  it.each([
    [429, true, undefined],
    [500, true, undefined],
    [502, true, undefined],
    [503, true, undefined],
    [400, false, undefined],
    [401, false, "http-status"],
    [403, false, "http-status"],
    [404, false, "http-status"],
    [409, false, undefined],
    [422, false, undefined],
  ] as const)("HTTP %i: retried %s, configuration fault %s", (status, retried, fault) => {
    const failure = httpFailure(status, undefined, "");
    expect(isRetryable(failure)).toBe(retried);
    expect(failure.fault).toBe(fault);
    expect(failure.message).toBe(`HTTP ${status}`);
  });

  it.each([
    ["a timeout", new Failure("timeout", "no response within 5 ms"), true],
    ["a dropped connection", new Failure("provider", "network error: socket hang up"), true],
    [
      "a refused connection",
      new Failure("provider", "connection refused", undefined, undefined, "connection-refused"),
      false,
    ],
    [
      "an unknown host",
      new Failure("provider", "host not found", undefined, undefined, "host-not-found"),
      false,
    ],
    ["a malformed 200", new Failure("provider", "malformed", 200), false],
  ])("%s: retried %s", (_what, failure, retried) => {
    expect(isRetryable(failure)).toBe(retried);
  });
});

describe("postWithRetries against a real server", () => {
  let mock: MockOpenAI;
  beforeAll(async () => {
    mock = await startMockOpenAI({
      respond: ({ key, n }) => {
        if (key === "flaky" && n <= 2) return { status: 503, retryAfter: 0 };
        if (key === "gone") return { status: 404, body: { error: { message: "no sk-secret-1" } } };
        return undefined;
      },
    });
  });
  afterAll(() => mock.close());

  const post = (key: string, retries: string[]): ResolvedPost<string> => ({
    url: `${mock.url}/chat/completions`,
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ model: "m", messages: [{ role: "user", content: key }] }),
    what: "model m",
    timeoutMs: 30_000,
    maxRetries: 3,
    backoff: { ...defaultBackoff, initialMs: 1 },
    onRetry: () => retries.push(key),
    secrets: ["sk-secret-1"],
    errorDetail: (text) => (JSON.parse(text) as { error: { message: string } }).error.message,
    parse: (text) => text,
  });

  it("re-sends after 503s, telling onRetry of each re-send, and hands back the parsed body", async () => {
    const retries: string[] = [];
    const { value, requests } = await postWithRetries(post("flaky", retries));
    expect(requests).toBe(3);
    expect(retries).toEqual(["flaky", "flaky"]);
    expect(value).toContain("choices");
  });

  it("a request whose rate permit lapsed before it was written gives it back and is written on a new one", async () => {
    // The first permit's chunk outlives its lease between the grant and the write (a process on a
    // loaded machine took up to a second to write a request on a new connection). Before, the
    // request was written on it all the same: over a window, more than the bucket's bound arrived.
    const events: string[] = [];
    const seen = () => `(server saw ${mock.counts().lapsing ?? 0})`;
    let permits = 0;
    const gate: RateGate = {
      acquire: () => {
        const id = ++permits;
        events.push(`acquire ${id} ${seen()}`);
        return Promise.resolve({
          settle: (answer) => events.push(`settle ${id}: ${answer.status} ${seen()}`),
          progressing: () => true,
          lapsed: () => id === 1,
          withdraw: () => events.push(`withdraw ${id} ${seen()}`),
        });
      },
    };
    const endpoint = { provider: "openai", model: "m", baseURL: mock.url };
    const { requests } = await postWithRetries({
      ...post("lapsing", []),
      rate: { gate, endpoint, tokens: 1 },
    });
    expect(requests).toBe(1);
    expect(mock.counts().lapsing).toBe(1);
    expect(events).toEqual([
      "acquire 1 (server saw 0)",
      "withdraw 1 (server saw 0)",
      "acquire 2 (server saw 0)",
      "settle 2: 200 (server saw 1)",
    ]);
  });

  it("fails a 404 at once as a configuration fault, the server's words with secrets blanked", async () => {
    const retries: string[] = [];
    const error = await postWithRetries(post("gone", retries)).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(SolverError);
    expect(error).toMatchObject({
      type: "provider",
      status: 404,
      configuration: { cause: "http-status", status: 404 },
      message: `POST ${mock.url}/chat/completions (model m) failed: HTTP 404: no ***`,
    });
    expect(retries).toEqual([]);
  });
});
