import { describe, expect, it } from "vitest";
import { defaultBackoff, parseRetryAfter, retryDelayMs, sleep } from "./backoff.js";

const NOW = Date.parse("2025-01-01T00:00:00Z");

describe("parseRetryAfter", () => {
  it.each([
    [{ "retry-after": "2" }, 2000],
    [{ "retry-after": "0.5" }, 500],
    [{ "retry-after": "Wed, 01 Jan 2025 00:00:03 GMT" }, 3000],
    [{ "retry-after": "Tue, 31 Dec 2024 23:59:00 GMT" }, 0],
    [{ "retry-after-ms": "250", "retry-after": "9" }, 250],
    [{ "retry-after": "soon" }, undefined],
    [{}, undefined],
  ])("%j → %s ms", (headers, expected) => {
    expect(parseRetryAfter(new Headers(headers), NOW)).toBe(expected);
  });
});

describe("retryDelayMs", () => {
  const backoff = { initialMs: 100, maxMs: 1_000, retryAfterCapMs: 5_000 };
  it.each([
    [0, 0.5, 50],
    [2, 0.5, 200],
    [10, 0.5, 500],
    [10, 0.999, 999],
    [3, 0, 0],
  ])(
    "retry %i with random %d waits %i ms (doubling, full jitter, capped)",
    (retry, random, expected) => {
      expect(retryDelayMs(retry, backoff, undefined, () => random)).toBe(expected);
    },
  );

  it.each([
    [2_000, 2_000],
    [60_000, 5_000],
  ])("a Retry-After of %i ms waits %i ms", (retryAfter, expected) => {
    expect(retryDelayMs(0, backoff, retryAfter)).toBe(expected);
  });

  it("has defaults", () => {
    expect(defaultBackoff).toMatchObject({ initialMs: 500, retryAfterCapMs: 60_000 });
  });
});

describe("sleep", () => {
  it("rejects with the abort reason as soon as the signal aborts", async () => {
    const controller = new AbortController();
    const started = Date.now();
    setTimeout(() => controller.abort(new Error("stop")), 20);
    await expect(sleep(60_000, controller.signal)).rejects.toThrow("stop");
    // Far from the minute it would sleep: a loaded machine cannot break it.
    expect(Date.now() - started).toBeLessThan(30_000);
  });

  it("rejects at once on an aborted signal and wraps a non-Error reason", async () => {
    const controller = new AbortController();
    controller.abort("bye");
    await expect(sleep(10, controller.signal)).rejects.toMatchObject({
      name: "AbortError",
      message: "aborted: bye",
    });
  });
});
