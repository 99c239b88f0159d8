import { afterEach, describe, expect, it } from "vitest";
import { startRateLimitedServer, type RateLimitedServer } from "./rate-limited-server.js";

let server: RateLimitedServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const post = (url: string, key: string, content = "hi", anthropic = false) =>
  fetch(anthropic ? `${url}/v1/messages` : `${url}/chat/completions`, {
    method: "POST",
    headers: anthropic
      ? { "x-api-key": key, "content-type": "application/json" }
      : { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify({ model: "m", max_tokens: 5, messages: [{ role: "user", content }] }),
  });

describe("the rate-limited test server", () => {
  it("admits rpm requests per key and window, then answers 429 with retry-after and headers", async () => {
    server = await startRateLimitedServer({ rpm: 3, windowMs: 60_000 });
    const answers = [];
    for (let i = 0; i < 4; i++) answers.push(await post(server.url, "k1"));
    expect(answers.map((a) => a.status)).toEqual([200, 200, 200, 429]);
    expect(answers[0]!.headers.get("x-ratelimit-limit-requests")).toBe("3");
    expect(answers[2]!.headers.get("x-ratelimit-remaining-requests")).toBe("0");
    expect(answers[3]!.headers.get("retry-after")).toMatch(/^\d+$/);
    expect(answers[3]!.headers.get("x-ratelimit-reset-requests")).toMatch(/s$/);
    // Another key has its own budget.
    expect((await post(server.url, "k2")).status).toBe(200);
    const body = (await answers[0]!.json()) as { usage: { prompt_tokens: number } };
    expect(body.usage.prompt_tokens).toBeGreaterThan(0);
    expect(server.counts()).toMatchObject({ requests: 5, admitted: 4, rejected: 1 });
    expect(server.countsOf("k1")).toMatchObject({ requests: 4, admitted: 3, rejected: 1 });
    expect(server.countsOf("k2")).toMatchObject({ requests: 1, admitted: 1, rejected: 0 });
    expect(server.countsOf("k3")).toMatchObject({ requests: 0 });
  });

  it("bounds tokens per window, speaks Anthropic's headers, and can send none", async () => {
    server = await startRateLimitedServer({ tpm: 100, windowMs: 60_000, completionTokens: 10 });
    const long = "x".repeat(200); // ~60 prompt tokens with the JSON around it
    const first = await post(server.anthropicUrl, "k", long, true);
    expect(first.status).toBe(200);
    expect(Number(first.headers.get("anthropic-ratelimit-tokens-remaining"))).toBeLessThan(100);
    expect((await post(server.anthropicUrl, "k", long, true)).status).toBe(429);
    expect(server.counts().maxTokensInWindow).toBeLessThanOrEqual(100);
    await server.close();
    server = await startRateLimitedServer({ rpm: 1, headers: false });
    await post(server.url, "k");
    const limited = await post(server.url, "k");
    expect(limited.status).toBe(429);
    expect(limited.headers.get("retry-after")).not.toBeNull();
    expect(limited.headers.get("x-ratelimit-remaining-requests")).toBeNull();
  });
});
