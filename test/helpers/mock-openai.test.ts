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
});
