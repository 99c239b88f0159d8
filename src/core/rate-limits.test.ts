import { describe, expect, it } from "vitest";
import { readRateHeaders } from "./rate-headers.js";
import {
  bucketSpec,
  declaredLimit,
  endpointName,
  keyedEndpointName,
  takeFromBucket,
  withFlagLimit,
} from "./rate-limits.js";

const headers = (entries: Record<string, string>) => ({
  get: (name: string) => entries[name] ?? null,
});

describe("rate-limit headers", () => {
  it.each([
    [
      { "x-ratelimit-remaining-requests": "3", "x-ratelimit-reset-requests": "1m2.5s" },
      { requests: { remaining: 3, resetMs: 62_500 } },
    ],
    [
      { "x-ratelimit-remaining-tokens": "10", "x-ratelimit-reset-tokens": "20ms" },
      { tokens: { remaining: 10, resetMs: 20 } },
    ],
    [
      {
        "anthropic-ratelimit-requests-remaining": "0",
        "anthropic-ratelimit-requests-reset": "1970-01-01T00:00:02.000Z",
      },
      // Any moment of that ms: the reset waits to its end.
      { requests: { remaining: 0, resetMs: 1001 } },
    ],
    [
      {
        "anthropic-ratelimit-tokens-remaining": "5",
        "anthropic-ratelimit-tokens-reset": "1970-01-01T00:00:02Z",
      },
      // Written to the second: any moment of that second.
      { tokens: { remaining: 5, resetMs: 2000 } },
    ],
    [
      {
        "anthropic-ratelimit-requests-remaining": "0",
        "anthropic-ratelimit-requests-reset": "1970-01-01T00:00:01.000Z",
      },
      // A reset now (within the ms it names) is still 1 ms away.
      { requests: { remaining: 0, resetMs: 1 } },
    ],
    [{ "retry-after": "2" }, { retryAfterMs: 2000 }],
    [{ "retry-after-ms": "150", "retry-after": "9" }, { retryAfterMs: 150 }],
    [{ "x-ratelimit-remaining-requests": "many" }, {}],
  ])("reads %j", (given, read) => {
    expect(readRateHeaders(headers(given), 1000)).toEqual(read);
  });
});

describe("the shared bucket", () => {
  it("never lets more than the limit be taken in a window and a lease", () => {
    const spec = bucketSpec({ rpm: 6000, windowMs: 6000 }); // 600 per 6 s
    // Take as fast as granted, every ms for 60 s: at most the limit in any window + lease span.
    let level;
    const takenAt: number[] = [];
    for (let t = 0; t < 60_000; t++) {
      const taken = takeFromBucket(level, spec, { requests: 7, tokens: 0, minTokens: 0 }, t);
      level = taken.level;
      for (let i = 0; i < taken.granted.requests; i++) takenAt.push(t);
    }
    let most = 0;
    for (let i = 0, j = 0; i < takenAt.length; i++) {
      while (takenAt[j]! <= takenAt[i]! - (6000 + spec.leaseMs)) j++;
      most = Math.max(most, i - j + 1);
    }
    expect(most).toBeLessThanOrEqual(600);
    // And it gives most of the limit: above 90 % over the minute.
    expect(takenAt.length).toBeGreaterThan(0.9 * 6000);
  });

  it("grants a long request's tokens on credit, then makes the others wait for the debt", () => {
    const spec = bucketSpec({ tpm: 4000 });
    const first = takeFromBucket(undefined, spec, { requests: 1, tokens: 500, minTokens: 500 }, 0);
    expect(first.granted.tokens).toBe(500);
    const next = takeFromBucket(first.level, spec, { requests: 1, tokens: 500, minTokens: 500 }, 1);
    expect(next.granted.requests).toBe(0);
    expect(next.retryInMs).toBeGreaterThan(0);
  });
});

describe("declared limits", () => {
  const endpoint = { provider: "openai", model: "m", baseURL: "https://u:secret@host/v1/" };
  it("names an endpoint without credentials and finds its limit by provider:model, model, URL or *", () => {
    expect(endpointName(endpoint)).toBe("openai:m@https://host/v1");
    expect(declaredLimit({ "openai:m": { rpm: 1 }, m: { rpm: 2 } }, endpoint)).toEqual({ rpm: 1 });
    expect(declaredLimit({ m: { rpm: 2 } }, endpoint)).toEqual({ rpm: 2 });
    expect(declaredLimit({ "*": { tpm: 3 } }, endpoint)).toEqual({ tpm: 3 });
    expect(declaredLimit({ "openai:other": { rpm: 1 } }, endpoint)).toBeUndefined();
  });
  it("names one key's budget by the endpoint and 16 digits of the key's keyed hash", () => {
    const hash = "0123456789abcdef".repeat(4);
    expect(keyedEndpointName("openai:m@https://host/v1", hash)).toBe(
      "openai:m@https://host/v1 key:0123456789abcdef",
    );
    expect(keyedEndpointName("openai:m@https://host/v1", undefined)).toBe(
      "openai:m@https://host/v1",
    );
  });
  it("puts --rpm/--tpm under the run's model, else *", () => {
    expect(withFlagLimit({ a: { rpm: 1 } }, { tpm: 5 }, "a")).toEqual({ a: { rpm: 1, tpm: 5 } });
    expect(withFlagLimit(undefined, { rpm: 5 }, undefined)).toEqual({ "*": { rpm: 5 } });
    expect(withFlagLimit(undefined, {}, "a")).toBeUndefined();
  });
});
