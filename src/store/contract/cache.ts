import { describe, expect, it } from "vitest";
import type { CacheEntry } from "../types.js";
import type { HarnessRef } from "./fixtures.js";

function entry(overrides: Partial<CacheEntry> = {}): CacheEntry {
  return {
    callHash: "a".repeat(64),
    credential: "c".repeat(64),
    request: '{"messages":[],"model":"m"}',
    reply: { content: "4", model: "m", usage: { inputTokens: 3, outputTokens: 1 } },
    createdAt: "2025-01-02T00:00:00.000Z",
    ...overrides,
  };
}

const EPOCH = "1970-01-01T00:00:00.000Z";

/** The reply cache: one reply per call and credential hash, shared by every connection. */
export function describeCacheContract(h: HarnessRef): void {
  describe("cache", () => {
    it("serves a stored reply for its call and credential only, and keeps the first", async () => {
      const e = entry();
      await h.store.cache.put(e);
      await h.store.cache.put(entry({ reply: { content: "other", model: "m" } }));
      expect(await h.store.cache.get(e.callHash, e.credential, EPOCH)).toEqual({
        request: e.request,
        reply: e.reply,
        createdAt: e.createdAt,
      });
      expect(await h.store.cache.get(e.callHash, "d".repeat(64), EPOCH)).toBeUndefined();
      expect(await h.store.cache.get("b".repeat(64), e.credential, EPOCH)).toBeUndefined();
      // Older than the ttl's start: not served.
      expect(await h.store.cache.get(e.callHash, e.credential, "2025-01-03T00:00:00.000Z")).toBe(
        undefined,
      );
      // Another connection (another worker) sees it.
      const other = await h.connect();
      expect((await other.cache.get(e.callHash, e.credential, EPOCH))?.reply).toEqual(e.reply);
    });

    it("makes one salt per store, the same for every connection", async () => {
      const salt = await h.store.cache.salt();
      expect(salt).toMatch(/^[0-9a-f]{64}$/);
      const other = await h.connect();
      expect(await other.cache.salt()).toBe(salt);
    });

    it("counts, prunes by age and clears", async () => {
      expect(await h.store.cache.stats()).toEqual({
        entries: 0,
        bytes: 0,
        oldest: null,
        newest: null,
      });
      const old = entry({ callHash: "1".repeat(64), createdAt: "2025-01-01T00:00:00.000Z" });
      const recent = entry({ callHash: "2".repeat(64), createdAt: "2025-03-01T00:00:00.000Z" });
      await h.store.cache.put(old);
      await h.store.cache.put(recent);
      const stats = await h.store.cache.stats();
      expect(stats).toMatchObject({ entries: 2, oldest: old.createdAt, newest: recent.createdAt });
      expect(stats.bytes).toBeGreaterThan(2 * old.request.length);
      expect(await h.store.cache.prune("2025-02-01T00:00:00.000Z")).toBe(1);
      expect(await h.store.cache.get(old.callHash, old.credential, EPOCH)).toBeUndefined();
      expect(await h.store.cache.clear()).toBe(1);
      expect((await h.store.cache.stats()).entries).toBe(0);
    });
  });
}
