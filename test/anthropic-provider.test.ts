import { readFileSync, existsSync } from "node:fs";
import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli } from "./helpers/cli.js";
import { perTest, rawAttempts } from "./helpers/eval-project.js";

const N = 3;
const ANTHROPIC_KEY = `sk-ant-test-${Math.random().toString(36).slice(2)}`;
const OPENAI_KEY = `sk-openai-test-${Math.random().toString(36).slice(2)}`;

type Block = { type: string; [key: string]: unknown };
type Turn = { role: string; content: string | Block[] };
interface Received {
  path: string;
  headers: IncomingHttpHeaders;
  body: { system?: unknown; messages: Turn[]; tools?: unknown[]; max_tokens?: unknown };
  text: string;
}

/** An agent over ctx.chat with one tool, against Anthropic; its output shows each reply's usage. */
const AGENT = `
import { defineEval } from "stet";
const tools = [{ name: "lookup", description: "looks up a number", parameters: { type: "object", properties: { q: { type: "number" } } } }];
export default defineEval({
  name: "claude-agent",
  dataset: "./data.jsonl",
  solver: async (sample, ctx) => {
    const messages = [{ role: "user", content: sample.input }];
    const usages = [];
    for (;;) {
      const reply = await ctx.chat({ model: "anthropic:claude-sonnet-4-5", system: "Be brief.", messages, tools });
      usages.push(reply.usage);
      messages.push(reply.message);
      if (reply.toolCalls.length === 0) return { answer: reply.content, finish: reply.finishReason, usages };
      for (const call of reply.toolCalls) {
        messages.push({ role: "tool", toolCallId: call.id, content: String(call.arguments.q * 10) });
      }
    }
  },
  scorers: [function correct({ sample, output }) { return output.answer === sample.target; }],
});
`;

const CHAT = `
import { defineEval, scorers, solvers } from "stet";
export default defineEval({
  name: "claude-chat",
  dataset: "./data.jsonl",
  solver: solvers.chat({ model: "anthropic:claude-haiku-4-5", system: "Be brief.", maxTokens: 64 }),
  scorers: [
    function correct({ sample, output }) { return output === sample.target; },
    scorers.modelGraded({ model: "anthropic:claude-haiku-4-5" }),
  ],
});
`;

const data = Array.from({ length: N }, (_, i) =>
  JSON.stringify({ id: `s${i}`, input: `task ${i}`, target: `answer ${i * 10}` }),
).join("\n");

const received: Received[] = [];
const overloaded = new Set<string>();
let server: Server;
let baseURL = "";

/** The Messages API as a local server: each conversation's first request gets a 529. */
function respond(body: Received["body"]): { status: number; json: unknown } {
  const first = body.messages[0]?.content;
  const key = typeof first === "string" ? first : JSON.stringify(first);
  if (!overloaded.has(key)) {
    overloaded.add(key);
    const error = { type: "overloaded_error", message: "Overloaded" };
    return { status: 529, json: { type: "error", error } };
  }
  const x = Number(/\d+/.exec(key)?.[0]);
  const last = body.messages.at(-1)?.content;
  const results = Array.isArray(last) ? last.filter((b) => b.type === "tool_result") : [];
  const message = (content: Block[], stop: string, usage: Record<string, number>) => ({
    status: 200,
    json: {
      id: "msg_1",
      type: "message",
      role: "assistant",
      model: "claude-sonnet-4-5",
      content,
      stop_reason: stop,
      usage,
    },
  });
  if (key.includes("GRADE")) {
    return message([{ type: "text", text: "Right.\nGRADE: C" }], "end_turn", {
      input_tokens: 30,
      output_tokens: 4,
    });
  }
  if (body.tools === undefined) {
    return message([{ type: "text", text: `answer ${x * 10}` }], "end_turn", {
      input_tokens: 10,
      output_tokens: 3,
    });
  }
  if (results.length === 0) {
    return message(
      [
        { type: "thinking", thinking: "I need the tool.", signature: "sig-1" },
        { type: "tool_use", id: `tu_${x}`, name: "lookup", input: { q: x } },
      ],
      "tool_use",
      {
        input_tokens: 100,
        output_tokens: 10,
        cache_read_input_tokens: 800,
        cache_creation_input_tokens: 50,
      },
    );
  }
  const result = { content: (results[0]?.content ?? []) as Block[] };
  return message(
    [{ type: "text", text: `answer ${String(result.content[0]?.text)}` }],
    "end_turn",
    {
      input_tokens: 20,
      output_tokens: 5,
      cache_read_input_tokens: 900,
      cache_creation_input_tokens: 0,
    },
  );
}

beforeAll(async () => {
  server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const text = Buffer.concat(chunks).toString("utf8");
      const body = JSON.parse(text) as Received["body"];
      received.push({ path: req.url ?? "", headers: req.headers, body, text });
      const { status, json } =
        req.url === "/v1/messages"
          ? respond(body)
          : { status: 404, json: { type: "error", error: { type: "not_found_error" } } };
      res.writeHead(status, { "content-type": "application/json", "retry-after": "0" });
      res.end(JSON.stringify(json));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  baseURL = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

const { project } = perTest();
const env = () => ({
  ANTHROPIC_BASE_URL: baseURL,
  ANTHROPIC_API_KEY: ANTHROPIC_KEY,
  // Set, and pointing at the same server: a request routed to OpenAI, or carrying its key,
  // would be seen there.
  OPENAI_BASE_URL: `${baseURL}/v1`,
  OPENAI_API_KEY: OPENAI_KEY,
});

function storeBytes(db: string): string {
  return [db, `${db}-wal`]
    .filter(existsSync)
    .map((f) => readFileSync(f).toString("latin1"))
    .join("");
}

describe("the anthropic provider through the real CLI", () => {
  it("ctx.chat: system hoisted, x-api-key and anthropic-version only, tool_use round-trips, a 529 is retried, cache usage read", async () => {
    received.length = 0;
    const p = project({ "eval.mjs": AGENT, "data.jsonl": data });
    const run = await runCli(["run", "eval.mjs"], { cwd: p.dir, env: env() });
    expect(run.code, run.stderr + run.stdout).toBe(0);

    // 3 requests per sample: the 529, the tool_use turn, the answer.
    expect(received).toHaveLength(3 * N);
    for (const r of received) {
      expect(r.path).toBe("/v1/messages");
      expect(r.headers["x-api-key"]).toBe(ANTHROPIC_KEY);
      expect(r.headers["anthropic-version"]).toBe("2023-06-01");
      expect(r.headers.authorization).toBeUndefined();
      expect(JSON.stringify(r.headers) + r.text).not.toContain(OPENAI_KEY);
      expect(r.body.system).toEqual([{ type: "text", text: "Be brief." }]);
      expect(r.body.messages.some((m) => m.role === "system")).toBe(false);
      expect(r.body.max_tokens).toBe(4096);
    }
    const last = received.filter((r) => r.body.messages.length === 3);
    expect(last).toHaveLength(N);
    expect(last[0]!.body.messages.slice(1)).toEqual([
      {
        role: "assistant",
        content: [
          { type: "thinking", thinking: "I need the tool.", signature: "sig-1" },
          {
            type: "tool_use",
            id: expect.stringMatching(/^tu_\d$/),
            name: "lookup",
            input: { q: expect.any(Number) },
          },
        ],
      },
      {
        role: "user",
        content: [
          {
            type: "tool_result",
            tool_use_id: expect.stringMatching(/^tu_\d$/),
            content: [{ type: "text", text: expect.any(String) }],
          },
        ],
      },
    ]);
    const turns = last[0]!.body.messages as { content: Block[] }[];
    expect(turns[2]!.content[0]!.tool_use_id).toBe(turns[1]!.content[1]!.id);

    const attempts = rawAttempts(p.db);
    expect(attempts.map((a) => [a.status, a.retries])).toEqual(Array(N).fill(["scored", 1]));
    // inputTokens count the cache's tokens too: (100 + 800 + 50) + (20 + 900 + 0).
    expect(attempts.map((a) => [a.input_tokens, a.output_tokens])).toEqual(
      Array(N).fill([1870, 15]),
    );
    expect(JSON.parse(String(attempts[1]!.output))).toMatchObject({
      answer: "answer 10",
      finish: "stop",
      usages: [
        { inputTokens: 950, outputTokens: 10, cachedInputTokens: 800, cacheWriteTokens: 50 },
        { inputTokens: 920, outputTokens: 5, cachedInputTokens: 900, cacheWriteTokens: 0 },
      ],
    });
    const bytes = storeBytes(p.db);
    expect(bytes).not.toContain(ANTHROPIC_KEY);
    expect(bytes).not.toContain(OPENAI_KEY);
  }, 60_000);

  it("solvers.chat and a modelGraded judge with anthropic: models go to the Messages API with Anthropic's key only", async () => {
    received.length = 0;
    const p = project({ "eval.mjs": CHAT, "data.jsonl": data.replaceAll("task", "hello") });
    const run = await runCli(["run", "eval.mjs"], { cwd: p.dir, env: env() });
    expect(run.code, run.stderr + run.stdout).toBe(0);
    // Per sample: the solver's 529 and answer, the judge's 529 and grade.
    expect(received).toHaveLength(4 * N);
    for (const r of received) {
      expect(r.path).toBe("/v1/messages");
      expect(r.headers["x-api-key"]).toBe(ANTHROPIC_KEY);
      expect(r.headers.authorization).toBeUndefined();
      expect(JSON.stringify(r.headers) + r.text).not.toContain(OPENAI_KEY);
    }
    const solver = received.filter((r) => r.body.system !== undefined);
    expect(solver).toHaveLength(2 * N);
    for (const r of solver) {
      expect(r.body).toMatchObject({ model: "claude-haiku-4-5", max_tokens: 64 });
      expect(r.body.system).toEqual([{ type: "text", text: "Be brief." }]);
    }
    const attempts = rawAttempts(p.db);
    expect(attempts.map((a) => [a.status, a.output, a.retries])).toEqual(
      Array.from({ length: N }, (_, i) => ["scored", JSON.stringify(`answer ${i * 10}`), 2]),
    );
    for (const a of attempts) {
      expect(JSON.parse(String(a.scores))).toMatchObject([{ value: 1 }, { value: 1 }]);
    }
    expect(storeBytes(p.db)).not.toContain(ANTHROPIC_KEY);
  }, 60_000);
});
