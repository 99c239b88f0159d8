import { describe, expect, it } from "vitest";
import { bucketSpec } from "../../core/rate-limits.js";
import type { HarnessRef } from "./fixtures.js";

const WANT = { requests: 5, tokens: 0, minTokens: 0 };

/** Rate-limit buckets and waits: one bucket per endpoint and one run's waits, shared by every connection. */
export function describeRatesContract(h: HarnessRef): void {
  describe("rates", () => {
    it("grants a bucket's capacity once across connections, then says when to ask again", async () => {
      // 600 requests per minute: a bucket of 15 that refills at ~9.3 a second; chunks of 5.
      const spec = bucketSpec({ rpm: 600 });
      const other = await h.connect();
      const granted: number[] = [];
      for (let i = 0; i < 3; i++) {
        const store = i % 2 === 0 ? h.store : other;
        const taken = await store.rates.take("openai:m@http://x/v1", spec, WANT);
        granted.push(taken.granted.requests);
      }
      expect(granted).toEqual([5, 5, 5]);
      const empty = await other.rates.take("openai:m@http://x/v1", spec, WANT);
      // Only what refilled in the few ms since: far less than a chunk.
      expect(empty.granted.requests).toBeLessThanOrEqual(1);
      if (empty.granted.requests === 0) expect(empty.retryInMs).toBeGreaterThan(0);
      // Another endpoint has its own bucket.
      const fresh = await h.store.rates.take("openai:n@http://x/v1", spec, WANT);
      expect(fresh.granted.requests).toBe(5);
    });

    it("grants what the bucket holds when a chunk wants more, on both axes", async () => {
      // 600 requests and 4,000 tokens per minute: buckets of 15 requests and 100 tokens.
      const spec = bucketSpec({ rpm: 600, tpm: 4000 });
      const want = { requests: 10, tokens: 60, minTokens: 1 };
      const first = await h.store.rates.take("both", spec, want);
      expect(first).toEqual({ granted: { requests: 10, tokens: 60 }, retryInMs: 0 });
      const second = await h.store.rates.take("both", spec, want);
      // The rest of both (refilled by a few ms' worth: under one request, a token or two).
      expect(second.granted.requests).toBe(5);
      expect(second.granted.tokens).toBeGreaterThanOrEqual(40);
      expect(second.granted.tokens).toBeLessThan(45);
    });

    it("grants a request's tokens on credit when the bucket holds fewer", async () => {
      const spec = bucketSpec({ tpm: 4000 }); // a bucket of 100 tokens
      const first = await h.store.rates.take("e", spec, {
        requests: 1,
        tokens: 250,
        minTokens: 250,
      });
      expect(first.granted).toEqual({ requests: 1, tokens: 250 });
      const second = await h.store.rates.take("e", spec, {
        requests: 1,
        tokens: 250,
        minTokens: 250,
      });
      expect(second.granted.requests).toBe(0);
      expect(second.retryInMs).toBeGreaterThan(1000);
    });

    it("shares an endpoint's pause across connections: extended, never shortened, read by the others", async () => {
      const other = await h.connect();
      expect(await other.rates.sharePause("openai:m@http://x/v1", 0)).toBe(0);
      const set = await h.store.rates.sharePause("openai:m@http://x/v1", 5000);
      expect(set).toBeGreaterThan(4000);
      expect(set).toBeLessThanOrEqual(5000);
      // A shorter pause asked later leaves the longer one.
      expect(await other.rates.sharePause("openai:m@http://x/v1", 1000)).toBeGreaterThan(4000);
      const seen = await other.rates.sharePause("openai:m@http://x/v1", 0);
      expect(seen).toBeGreaterThan(4000);
      expect(seen).toBeLessThanOrEqual(set);
      // Another endpoint, and the endpoint's bucket, are not paused by it.
      expect(await other.rates.sharePause("openai:n@http://x/v1", 0)).toBe(0);
      const taken = await other.rates.take("openai:m@http://x/v1", bucketSpec({ rpm: 600 }), WANT);
      expect(taken.granted.requests).toBe(5);
    });

    it("sums every process's waits per endpoint, each process's totals replaced as they grow", async () => {
      const other = await h.connect();
      const w = (endpoint: string, n: number) => ({
        endpoint,
        requests: n,
        throttled: n - 1,
        rejected: 1,
        waitMs: n * 10,
      });
      await h.store.rates.recordWaits("r_1", "a", [w("e1", 2), w("e2", 3)]);
      await h.store.rates.recordWaits("r_1", "a", [w("e1", 5)]);
      await other.rates.recordWaits("r_1", "b", [w("e1", 4)]);
      await other.rates.recordWaits("r_2", "b", [w("e1", 100)]);
      expect(await other.rates.listWaits("r_1")).toEqual([
        { endpoint: "e1", requests: 9, throttled: 7, rejected: 2, waitMs: 90, waiting: 0 },
        { endpoint: "e2", requests: 3, throttled: 2, rejected: 1, waitMs: 30, waiting: 0 },
      ]);
      expect(await h.store.rates.listWaits("r_3")).toEqual([]);
    });

    it("sums the requests every process says wait now, each process's last word standing", async () => {
      const other = await h.connect();
      const w = (waiting: number) => ({
        endpoint: "e1",
        requests: 1,
        throttled: 0,
        rejected: 0,
        waitMs: 0,
        waiting,
      });
      await h.store.rates.recordWaits("r_1", "a", [w(3)]);
      await other.rates.recordWaits("r_1", "b", [w(4)]);
      expect(await h.store.rates.listWaits("r_1")).toMatchObject([{ endpoint: "e1", waiting: 7 }]);
      await h.store.rates.recordWaits("r_1", "a", [w(0)]);
      expect(await other.rates.listWaits("r_1")).toMatchObject([{ endpoint: "e1", waiting: 4 }]);
    });
  });
}
