import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it, onTestFinished } from "vitest";
import type { LanguageModelCallOptions } from "../core/language-model.js";
import type { Usage } from "../core/types.js";
import { reusedUsage } from "../core/usage.js";
import type { JournalEntry, StepDraft, StepDiscard } from "../store/types.js";
import { generateLanguageModel } from "../solvers/ai-sdk-model.js";
import { isSolverError } from "../solvers/solver-error.js";
import { openSqliteStore } from "../store/sqlite/index.js";
import { wrapLanguageModel, type WrapContext } from "./language-model-step.js";
import { ReplyCache } from "./reply-cache.js";
import { StepJournal } from "./step-journal.js";

const key = { sampleId: "s1", epoch: 1 };
const usage = {
  inputTokens: { total: 1000, noCache: 200, cacheRead: 800, cacheWrite: undefined },
  outputTokens: { total: 100, text: 100, reasoning: undefined },
};

/** A V4 model that answers every call and counts them; `fail` scripts errors to throw first. */
function fakeModel(fail: unknown[] = []) {
  const calls: LanguageModelCallOptions[] = [];
  return {
    calls,
    specificationVersion: "v4" as const,
    provider: "fake.chat",
    modelId: "gpt-4o-mini",
    supportedUrls: { "image/*": [/^https:/] },
    doGenerate(options: LanguageModelCallOptions) {
      calls.push(options);
      if (fail.length > 0) return Promise.reject(fail.shift());
      return Promise.resolve({
        content: [{ type: "text", text: `reply ${calls.length}` }],
        finishReason: { unified: "stop", raw: "stop" },
        usage,
        warnings: [],
        request: { body: { huge: true } },
        response: { id: "r1", timestamp: new Date(0), headers: { "set-cookie": "x" }, body: {} },
      });
    },
    doStream(options: LanguageModelCallOptions) {
      calls.push(options);
      const parts = [
        { type: "stream-start", warnings: [] },
        { type: "response-metadata", id: "r1", timestamp: new Date(0) },
        { type: "text-delta", id: "t", delta: "hi" },
        { type: "finish", usage, finishReason: { unified: "stop", raw: "stop" } },
      ];
      const stream = new ReadableStream({
        start(controller) {
          for (const part of parts) controller.enqueue(part);
          controller.close();
        },
      });
      return Promise.resolve({ stream });
    },
  };
}

function journalOf(entries: JournalEntry[], written: StepDraft[]) {
  return new StepJournal({
    key,
    entries,
    write: (draft: StepDraft | StepDiscard) => {
      if ("step" in draft) written.push(draft);
      return Promise.resolve();
    },
    redact: (value) => ({ value, found: [] }),
  });
}

const asEntries = (drafts: StepDraft[]): JournalEntry[] =>
  drafts.map(({ truncate: _t, ...draft }) => ({ ...draft, runId: "r_1", attempt: null }));

async function read(stream: ReadableStream<unknown>): Promise<unknown[]> {
  const parts: unknown[] = [];
  for await (const part of stream as unknown as AsyncIterable<unknown>) parts.push(part);
  return parts;
}

function wrap(
  model: ReturnType<typeof fakeModel>,
  journal: StepJournal | undefined,
  signal = new AbortController().signal,
  cache?: WrapContext["cache"],
) {
  const spent: Usage[] = [];
  let retries = 0;
  const wrapped = wrapLanguageModel(model, {
    generator: generateLanguageModel,
    signal,
    onRetry: () => void retries++,
    spend: (u) => void spent.push(u),
    journal,
    cache,
  });
  return { wrapped, spent, retries: () => retries };
}

const prompt = [{ role: "user", content: [{ type: "text", text: "Hi" }] }];

describe("ctx.languageModel's wrapper", () => {
  it("journals doGenerate and replays it on resume without calling the model", async () => {
    const model = fakeModel();
    const written: StepDraft[] = [];
    const first = wrap(model, journalOf([], written));
    expect(first.wrapped.specificationVersion).toBe("v4");
    expect(first.wrapped.supportedUrls).toBe(model.supportedUrls);
    const live = (await first.wrapped.doGenerate({ prompt, headers: { a: "b" } })) as Record<
      string,
      unknown
    >;
    expect(live).toMatchObject({ content: [{ type: "text", text: "reply 1" }] });
    expect(live).not.toHaveProperty("request");
    expect(live.response).toEqual({ id: "r1", timestamp: new Date(0) });
    // Priced by the model id's tiers: 200 uncached input tokens at 0.15 per 1M, 800 cached at
    // 0.075, 100 output at 0.6.
    expect(first.spent).toEqual([
      {
        inputTokens: 1000,
        outputTokens: 100,
        cachedInputTokens: 800,
        costUsd: (200 * 0.15 + 800 * 0.075 + 100 * 0.6) / 1e6,
      },
    ]);
    expect(written).toMatchObject([
      {
        kind: "chat",
        name: "ai-sdk.generate",
        input: { provider: "fake.chat", model: "gpt-4o-mini", options: { prompt } },
      },
    ]);

    const journal = journalOf(asEntries(written), []);
    const again = wrap(model, journal);
    const replayed = await again.wrapped.doGenerate({ prompt, headers: { c: "d" } });
    expect(replayed).toEqual(live);
    expect(model.calls).toHaveLength(1);
    // Still the attempt's usage (its whole trajectory), all of it reused: no spend now.
    expect(again.spent).toEqual([reusedUsage(first.spent[0]!)]);
    expect(journal.reused).toEqual(first.spent);
  });

  it("journals doStream as its parts and replays them as a stream", async () => {
    const model = fakeModel();
    const written: StepDraft[] = [];
    const first = wrap(model, journalOf([], written));
    const { stream } = (await first.wrapped.doStream({ prompt })) as {
      stream: ReadableStream<unknown>;
    };
    const parts = await read(stream);
    expect(parts).toHaveLength(4);
    expect(first.spent).toMatchObject([{ inputTokens: 1000, outputTokens: 100 }]);

    const again = wrap(model, journalOf(asEntries(written), []));
    const replayed = (await again.wrapped.doStream({ prompt })) as {
      stream: ReadableStream<unknown>;
    };
    expect(await read(replayed.stream)).toEqual(parts);
    expect(model.calls).toHaveLength(1);
  });

  it("serves doGenerate and doStream from the reply cache: the model not called, the usage reused, journaled as if sent", async () => {
    const dir = mkdtempSync(join(tmpdir(), "stet-lm-cache-"));
    const store = openSqliteStore(join(dir, "stet.db"));
    onTestFinished(async () => {
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    });
    const replies = new ReplyCache(store.cache, { perEpoch: true });
    const target = { provider: "fake.chat", baseURL: "http://h/v1", credential: '["k",[]]' };
    const cache: WrapContext["cache"] = (name, input) => replies.result(name, input, target, 1);
    const model = fakeModel();
    const first = wrap(model, journalOf([], []), undefined, cache);
    const live = await first.wrapped.doGenerate({ prompt });
    const streamed = await read(
      ((await first.wrapped.doStream({ prompt })) as { stream: ReadableStream<unknown> }).stream,
    );
    expect(model.calls).toHaveLength(2);

    const written: StepDraft[] = [];
    const second = wrap(model, journalOf([], written), undefined, cache);
    expect(await second.wrapped.doGenerate({ prompt })).toEqual(live);
    const again = (await second.wrapped.doStream({ prompt })) as {
      stream: ReadableStream<unknown>;
    };
    expect(await read(again.stream)).toEqual(streamed);
    expect(model.calls).toHaveLength(2);
    // Bought by the first calls: reused, no spend now; journaled, so a resume replays them.
    expect(second.spent).toEqual(first.spent.map((u) => reusedUsage(u)));
    expect(written.map((w) => w.name)).toEqual(["ai-sdk.generate", "ai-sdk.stream"]);
    // Another call (another prompt) is sent.
    await second.wrapped.doGenerate({ prompt: [{ role: "user", content: [] }] });
    expect(model.calls).toHaveLength(3);
  });

  it("aborts the model's request with the attempt (and with the caller's own signal)", async () => {
    const model = fakeModel();
    const attempt = new AbortController();
    const caller = new AbortController();
    await wrap(model, undefined, attempt.signal).wrapped.doGenerate({
      prompt,
      abortSignal: caller.signal,
    });
    const sent = model.calls[0]!.abortSignal!;
    expect(sent.aborted).toBe(false);
    caller.abort();
    expect(sent.aborted).toBe(true);

    await wrap(model, undefined, attempt.signal).wrapped.doGenerate({ prompt });
    attempt.abort();
    expect(model.calls[1]!.abortSignal!.aborted).toBe(true);
  });

  it("refuses what is not an AI SDK model, saying what it needs", () => {
    const notAModel = { provider: "x", modelId: "y" } as unknown as ReturnType<typeof fakeModel>;
    expect(() => wrap(notAModel, undefined)).toThrow(/needs an AI SDK language model/);
  });

  it("retries a 429 with stet's policy (counted) and fails a 401 at once as a configuration fault", async () => {
    const busy = {
      message: "rate limited",
      statusCode: 429,
      url: "http://x/v1/chat/completions",
      responseHeaders: { "retry-after-ms": "1" },
    };
    const model = fakeModel([busy]);
    const first = wrap(model, undefined);
    await first.wrapped.doGenerate({ prompt });
    expect(model.calls).toHaveLength(2);
    expect(first.retries()).toBe(1);

    const denied = { message: "bad key", statusCode: 401, url: "http://u:p@x/v1/chat/completions" };
    const refused = fakeModel([denied]);
    const error = await wrap(refused, undefined)
      .wrapped.doGenerate({ prompt })
      .catch((e) => e);
    expect(isSolverError(error, "provider")).toBe(true);
    expect(error).toMatchObject({
      status: 401,
      configuration: { cause: "http-status", url: "http://***@x/v1/chat/completions", status: 401 },
    });
    expect(refused.calls).toHaveLength(1);
  });
});
