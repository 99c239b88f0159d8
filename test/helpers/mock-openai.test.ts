import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { spawnMockOpenAI, startMockOpenAI } from "./mock-openai.js";

const ask = (url: string, content: string) =>
  fetch(`${url}/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({
      model: "m",
      messages: [
        { role: "system", content: "s" },
        { role: "user", content },
      ],
    }),
  });

describe("mock OpenAI server", () => {
  it("counts requests per user message and follows a per-sample sequence", async () => {
    const mock = await startMockOpenAI({ sequence: [{ status: 429, retryAfter: 2 }] });
    try {
      const before = Date.now();
      const first = await ask(mock.url, "a");
      expect(first.status).toBe(429);
      expect(first.headers.get("retry-after")).toBe("2");
      const second = await ask(mock.url, "a");
      expect(await second.json()).toMatchObject({
        choices: [{ message: { role: "assistant", content: "a" } }],
        usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 },
      });
      expect((await ask(mock.url, "b")).status).toBe(429);
      expect(mock.counts()).toEqual({ a: 2, b: 1 });
      // Arrival times, for request rates: increasing, and on the wall clock.
      const times = mock.requests.map((r) => r.receivedAt);
      expect(times).toEqual([...times].sort((x, y) => x - y));
      // Between the wall-clock readings around the requests (give or take the drift of the
      // monotonic clock it is read from, which no load changes).
      expect(times[0]).toBeGreaterThanOrEqual(before - 1_000);
      expect(times.at(-1)).toBeLessThanOrEqual(Date.now() + 1_000);
      expect(await (await fetch(`${mock.url.replace(/\/v1$/, "")}/__counts`)).json()).toEqual({
        a: 2,
        b: 1,
      });
    } finally {
      await mock.close();
    }
  });

  it("runs as a standalone process with a counts file and replies", async () => {
    const countsFile = join(mkdtempSync(join(tmpdir(), "stet-mock-")), "counts.json");
    const mock = await spawnMockOpenAI([
      "--counts-file",
      countsFile,
      "--replies",
      '{"2+2?":"4"}',
      "--latency-ms",
      "5",
    ]);
    try {
      const reply = await (await ask(mock.url, "2+2?")).json();
      expect(reply).toMatchObject({ choices: [{ message: { content: "4" } }] });
      await ask(mock.url, "echo me");
      expect(await mock.counts()).toEqual({ "2+2?": 1, "echo me": 1 });
      expect(JSON.parse(readFileSync(countsFile, "utf8"))).toEqual({ "2+2?": 1, "echo me": 1 });
    } finally {
      await mock.stop();
    }
  });

  it("speaks the Messages API at /v1/messages: the same scripted actions as tool_use blocks and error bodies, its tool_result blocks read as tool messages", async () => {
    const mock = await startMockOpenAI({
      respond: ({ messages, n }) =>
        n === 1
          ? { status: 500, retryAfter: 0 }
          : messages.some((m) => m.role === "tool")
            ? { reply: "done" }
            : { toolCalls: [{ id: "tu_1", name: "add", arguments: { a: 1 } }] },
    });
    const post = (messages: unknown[]) =>
      fetch(`${mock.anthropicURL}/v1/messages`, {
        method: "POST",
        headers: { "content-type": "application/json", "anthropic-version": "2023-06-01" },
        body: JSON.stringify({
          model: "claude-haiku-4-5",
          max_tokens: 64,
          system: [{ type: "text", text: "s" }],
          tools: [{ name: "add", input_schema: { type: "object" } }],
          messages,
        }),
      });
    try {
      const user = { role: "user", content: [{ type: "text", text: "task" }] };
      const failed = await post([user]);
      expect(failed.status).toBe(500);
      expect(await failed.json()).toEqual({
        type: "error",
        error: { type: "api_error", message: "mock error 500" },
      });
      const called = (await (await post([user])).json()) as { content: unknown };
      expect(called).toMatchObject({
        type: "message",
        role: "assistant",
        content: [{ type: "tool_use", id: "tu_1", name: "add", input: { a: 1 } }],
        stop_reason: "tool_use",
        usage: { input_tokens: 10, output_tokens: 5 },
      });
      const turns = [
        user,
        { role: "assistant", content: called.content },
        { role: "user", content: [{ type: "tool_result", tool_use_id: "tu_1", content: "1" }] },
      ];
      expect(await (await post(turns)).json()).toMatchObject({
        content: [{ type: "text", text: "done" }],
        stop_reason: "end_turn",
      });
      expect(mock.counts()).toEqual({ task: 3 });
      expect(mock.requests.at(-1)).toMatchObject({
        format: "anthropic",
        tools: ["add"],
        messages: [
          { role: "system", content: "s" },
          { role: "user", content: "task" },
          {
            role: "assistant",
            content: "",
            toolCalls: [{ id: "tu_1", name: "add", arguments: { a: 1 } }],
          },
          { role: "tool", toolCallId: "tu_1", content: "1" },
        ],
      });
    } finally {
      await mock.close();
    }
  });
});
