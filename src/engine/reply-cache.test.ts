import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { CallTarget, SentReply } from "../core/eval.js";
import type { Json } from "../core/json.js";
import { openSqliteStore } from "../store/sqlite/index.js";
import type { Store, StepDraft } from "../store/types.js";
import { journaledChat, withParts } from "./chat-step.js";
import { ReplyCache } from "./reply-cache.js";
import { StepJournal } from "./step-journal.js";

const CALL: Json = { model: "m", messages: [{ role: "user", content: "2+2?" }] };
const TARGET: CallTarget = { provider: "openai", baseURL: "http://h/v1", credential: '["k1",[]]' };
const REPLY: SentReply = {
  content: "4",
  model: "m",
  finishReason: "stop",
  usage: { inputTokens: 7, outputTokens: 1, costUsd: 0.5 },
};

let dir: string;
let store: Store;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "stet-reply-cache-"));
  store = openSqliteStore(join(dir, "stet.db"));
});
afterEach(async () => {
  await store.close();
  rmSync(dir, { recursive: true, force: true });
});

function journal(entries: StepDraft[] = [], written: StepDraft[] = []): StepJournal {
  return new StepJournal({
    key: { sampleId: "s", epoch: 1 },
    entries: entries.map((e) => ({ ...e, runId: "r", attempt: null })),
    write: async (draft) => void ("step" in draft && written.push(draft)),
    redact: (value) => ({ value, found: [] }),
  });
}

describe("ReplyCache", () => {
  it("serves a reply only to the same call, endpoint, credential and epoch", async () => {
    const cache = new ReplyCache(store.cache, { perEpoch: true });
    await cache.call(CALL, TARGET, 1).put(withParts(REPLY));
    expect((await cache.call(CALL, TARGET, 1).get())?.content).toBe("4");
    const misses: [Json, CallTarget, number][] = [
      [{ ...(CALL as object), model: "m2" }, TARGET, 1],
      [{ ...(CALL as object), messages: [{ role: "user", content: "2+3?" }] }, TARGET, 1],
      [{ ...(CALL as object), temperature: 1 }, TARGET, 1],
      [CALL, { ...TARGET, baseURL: "http://other/v1" }, 1],
      [CALL, { ...TARGET, provider: "anthropic" }, 1],
      [CALL, { ...TARGET, credential: '["k2",[]]' }, 1],
      [CALL, TARGET, 2],
    ];
    for (const [call, target, epoch] of misses) {
      expect(
        await cache.call(call, target, epoch).get(),
        JSON.stringify([call, target, epoch]),
      ).toBe(undefined);
    }
    // One reply for every epoch when perEpoch is false (a cache of its own: other keys).
    const shared = new ReplyCache(store.cache, { perEpoch: false });
    await shared.call(CALL, TARGET, 1).put(withParts(REPLY));
    expect((await shared.call(CALL, TARGET, 3).get())?.content).toBe("4");
  });

  it("serves nothing whose stored call differs, though its hashes match", async () => {
    const cache = new ReplyCache(store.cache, { perEpoch: true });
    const call = cache.call(CALL, TARGET, 1);
    await call.put(withParts(REPLY));
    // A forged row: the same hashes, another call's text.
    const [row] = await rows();
    await store.cache.clear();
    await store.cache.put({ ...row!, request: '{"call":"another"}' });
    expect(await call.get()).toBeUndefined();
  });

  it("stores no refusal and no filtered reply", async () => {
    const cache = new ReplyCache(store.cache, { perEpoch: true });
    for (const finishReason of ["refusal", "content_filter"] as const) {
      await cache.call(CALL, TARGET, 1).put(withParts({ ...REPLY, finishReason }));
    }
    expect((await store.cache.stats()).entries).toBe(0);
  });

  it("journals a hit like a replay: reused now, and replayed by a resume without the cache", async () => {
    const cache = new ReplyCache(store.cache, { perEpoch: true });
    let sent = 0;
    const send = async () => (sent++, REPLY);
    const first = await journaledChat(journal(), CALL, send, {
      cache: cache.call(CALL, TARGET, 1),
    });
    expect(first).toMatchObject({ replayed: false, usage: REPLY.usage });
    const written: StepDraft[] = [];
    const hit = await journaledChat(journal([], written), CALL, send, {
      cache: cache.call(CALL, TARGET, 1),
    });
    expect(sent).toBe(1);
    expect(hit.replayed).toBe(true);
    expect(hit.reply.content).toBe("4");
    expect(hit.usage?.reused).toEqual(REPLY.usage);
    expect(written[0]).toMatchObject({ kind: "chat", usage: REPLY.usage });
    // The resume: the cache emptied, the endpoint unanswered; the journal replays the hit.
    await store.cache.clear();
    const resumed = await journaledChat(journal(written), CALL, async () => {
      throw new Error("sent again");
    });
    expect(resumed.replayed).toBe(true);
    expect(resumed.reply.content).toBe("4");
    expect(resumed.usage?.reused).toEqual(REPLY.usage);
  });

  it("keeps an AI SDK call's result apart: its step, call and target; never a chat reply's", async () => {
    const cache = new ReplyCache(store.cache, { perEpoch: true });
    const result: Json = { content: [{ type: "text", text: "4" }], finishReason: "stop" };
    const usage = { inputTokens: 7, outputTokens: 1, costUsd: 0.5 };
    await cache.result("ai-sdk.generate", CALL, TARGET, 1).put({ result, usage });
    // Its target may come later (an AI SDK provider package's headers are read asynchronously).
    expect(await cache.result("ai-sdk.generate", CALL, Promise.resolve(TARGET), 1).get()).toEqual({
      result,
      usage,
    });
    expect(await cache.result("ai-sdk.stream", CALL, TARGET, 1).get()).toBeUndefined();
    const otherKey = { ...TARGET, credential: "k2" };
    expect(await cache.result("ai-sdk.generate", CALL, otherKey, 1).get()).toBeUndefined();
    // The same call identity asked as a chat call: not the result's entry, and the reverse.
    expect(await cache.call(CALL, TARGET, 1).get()).toBeUndefined();
    await cache.call(CALL, TARGET, 2).put(withParts(REPLY));
    expect(await cache.result("ai-sdk.generate", CALL, TARGET, 2).get()).toBeUndefined();
    expect((await store.cache.stats()).entries).toBe(2);
  });

  it("stores no filtered or failed AI SDK result, and nothing for a target that came to nothing", async () => {
    const cache = new ReplyCache(store.cache, { perEpoch: true });
    const filtered: Json[] = [
      { content: [], finishReason: "content-filter" },
      { content: [], finishReason: { unified: "content-filter", raw: "safety" } },
      {
        parts: [
          { type: "text-delta", delta: "a" },
          { type: "error", error: "boom" },
        ],
      },
      { parts: [{ type: "finish", finishReason: { unified: "error", raw: "x" } }] },
    ];
    for (const result of filtered) {
      await cache.result("ai-sdk.generate", CALL, TARGET, 1).put({ result });
    }
    const nowhere = Promise.resolve(undefined);
    await cache.result("ai-sdk.generate", CALL, nowhere, 1).put({ result: { content: [] } });
    await cache.call(CALL, nowhere, 1).put(withParts(REPLY));
    expect(await cache.call(CALL, nowhere, 1).get()).toBeUndefined();
    expect((await store.cache.stats()).entries).toBe(0);
  });
});

async function rows() {
  const { default: Database } = await import("better-sqlite3");
  const db = new Database(join(dir, "stet.db"), { readonly: true });
  try {
    return db
      .prepare("SELECT call_hash, credential, request, reply, created_at FROM reply_cache")
      .all()
      .map((r) => {
        const row = r as Record<string, string>;
        return {
          callHash: row.call_hash!,
          credential: row.credential!,
          request: row.request!,
          reply: JSON.parse(row.reply!) as Json,
          createdAt: row.created_at!,
        };
      });
  } finally {
    db.close();
  }
}
