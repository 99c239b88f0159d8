import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli, startCli } from "./helpers/cli.js";
import { perTest, rawAttempts } from "./helpers/eval-project.js";
import { startMockOpenAI, type MockAction, type MockOpenAI } from "./helpers/mock-openai.js";
import { until } from "./helpers/wait.js";

const N = 8;

/**
 * A two-tool agent over ctx.chat in canonical form: it appends each reply's `message` and
 * answers each tool call with a `tool` message by `toolCallId`. Its output holds the tool calls
 * it saw, as ctx.chat gave them (arguments parsed).
 */
const EVAL = `
import { appendFileSync } from "node:fs";
import { defineEval } from "stet";
const schema = { type: "object", properties: { a: { type: "number" }, b: { type: "number" } }, required: ["a", "b"] };
const tools = [
  { name: "add", description: "a + b", parameters: schema },
  { name: "multiply", description: "a * b", parameters: schema },
];
const run = { add: ({ a, b }) => a + b, multiply: ({ a, b }) => a * b };
export default defineEval({
  name: "tools",
  dataset: "./data.jsonl",
  concurrency: ${N},
  solver: async (sample, ctx) => {
    const messages = [{ role: "user", content: sample.input }];
    const seen = [];
    for (let round = 0; round < 5; round++) {
      const reply = await ctx.chat({ model: "gpt-4o-mini", baseURL: process.env.MOCK_URL, messages, tools, toolChoice: "auto" });
      messages.push(reply.message);
      if (reply.toolCalls.length === 0) {
        return { output: { answer: reply.content, finish: reply.finishReason, seen }, transcript: messages };
      }
      for (const call of reply.toolCalls) {
        seen.push({ ...call, finish: reply.finishReason });
        const result = await ctx.step("tool", call, () => {
          appendFileSync(process.env.TOOL_LOG, sample.id + " " + call.name + "\\n");
          return run[call.name](call.arguments);
        });
        messages.push({ role: "tool", toolCallId: call.id, content: String(result) });
      }
    }
    throw new Error("no final answer");
  },
  scorers: [function correct({ sample, output }) { return output.answer === sample.target; }],
});
`;

const data = Array.from({ length: N }, (_, i) =>
  JSON.stringify({ id: `s${i}`, input: `task ${i}`, target: `result ${(i + 3) * 2}` }),
).join("\n");

type WireMessage = {
  role: string;
  content?: unknown;
  tool_call_id?: unknown;
  tool_calls?: { id: string; type: string; function: { name: string; arguments: unknown } }[];
};

const bad = (why: string): MockAction => ({ status: 400, body: { error: { message: why } } });
const toolCall = (id: string, name: string, args: object): MockAction => ({
  message: {
    content: null,
    tool_calls: [{ id, type: "function", function: { name, arguments: JSON.stringify(args) } }],
  },
  finishReason: "tool_calls",
});

/** How many tool results a request carries: its round (0: add, 1: multiply, 2: the answer). */
const round = (body: Record<string, unknown>) =>
  (body.messages as WireMessage[]).filter((m) => m.role === "tool").length;

let hold = false;
let mock: MockOpenAI;
beforeAll(async () => {
  // A model that speaks OpenAI's wire format and refuses anything else stet might send.
  mock = await startMockOpenAI({
    respond: ({ body, key }) => {
      const messages = body.messages as WireMessage[];
      if (!Array.isArray(body.tools) || body.tools.length !== 2) return bad("tools missing");
      if (body.tool_choice !== "auto") return bad("tool_choice missing");
      for (const m of messages) {
        if ("toolCalls" in m || "toolCallId" in m) return bad("canonical fields on the wire");
        if (m.role === "tool" && typeof m.tool_call_id !== "string") return bad("tool_call_id");
        if (m.tool_calls?.some((c) => typeof c.function.arguments !== "string"))
          return bad("arguments are not JSON text");
      }
      const x = Number(/\d+/.exec(key)?.[0]);
      const results = messages.filter((m) => m.role === "tool");
      const answered = (id: string) => results.at(-1)?.tool_call_id === id;
      switch (round(body)) {
        case 0:
          return toolCall(`add-${x}`, "add", { a: x, b: 3 });
        case 1:
          if (!answered(`add-${x}`)) return bad("the add call was not answered by its id");
          return toolCall(`mul-${x}`, "multiply", { a: Number(results[0]?.content), b: 2 });
        default:
          if (!answered(`mul-${x}`)) return bad("the multiply call was not answered by its id");
          // While `hold` is set the final calls hang: they are in flight when the run is killed.
          return hold ? { hang: true } : { reply: `result ${String(results[1]?.content)}` };
      }
    },
  });
});
afterAll(() => mock.close());

const { project } = perTest();
const toolLines = (path: string) =>
  existsSync(path) ? readFileSync(path, "utf8").split("\n").filter(Boolean) : [];
const perRound = () => {
  const counts = [0, 0, 0];
  for (const r of mock.requests) counts[Math.min(round(r.body), 2)]!++;
  return counts;
};

describe("tool calls through ctx.chat, with the real CLI", () => {
  it("a two-tool agent completes; SIGKILLed mid-trajectory and resumed, the journal replays the tool calls and only the calls in flight are bought again", async () => {
    const plain = project({ "eval.mjs": EVAL, "data.jsonl": data });
    const plainEnv = { MOCK_URL: mock.url, TOOL_LOG: join(plain.dir, "tools.log") };
    const clean = await runCli(["run", "eval.mjs"], { cwd: plain.dir, env: plainEnv });
    expect(clean.code, clean.stderr + clean.stdout).toBe(0);
    const expected = rawAttempts(plain.db);
    expect(expected.map((a) => a.status)).toEqual(Array(N).fill("scored"));
    expect(JSON.parse(String(expected[1]!.output))).toEqual({
      answer: "result 8",
      finish: "stop",
      seen: [
        { id: "add-1", name: "add", arguments: { a: 1, b: 3 }, finish: "tool_calls" },
        { id: "mul-1", name: "multiply", arguments: { a: 4, b: 2 }, finish: "tool_calls" },
      ],
    });
    expect(JSON.parse(String(expected[1]!.scores))).toMatchObject([{ value: 1 }]);
    expect(perRound()).toEqual([N, N, N]);

    mock.reset();
    hold = true;
    const p = project({ "eval.mjs": EVAL, "data.jsonl": data });
    const log = join(p.dir, "tools.log");
    const env = { MOCK_URL: mock.url, TOOL_LOG: log };
    const cli = startCli(["run", "eval.mjs"], { cwd: p.dir, env });
    const runId = (await cli.waitFor(/^run (r_\w+)/m))[1]!;
    // Every sample's last call has arrived: the steps before it are journaled (each is written
    // through before its result is handed back), and the last call is in flight.
    await until(() => perRound()[2] === N, `${N} calls in flight`, 60_000);
    cli.child.kill("SIGKILL");
    expect((await cli.done).signal).toBe("SIGKILL");
    expect(toolLines(log)).toHaveLength(2 * N);
    hold = false;

    const resumed = await runCli(["resume", runId], { cwd: p.dir, env });
    expect(resumed.code, resumed.stderr + resumed.stdout).toBe(0);
    // Rounds 0 and 1 were replayed with their tool calls (nothing re-sent, no tool run again);
    // only the N calls in flight at the kill were bought again.
    expect(perRound()).toEqual([N, N, 2 * N]);
    expect(toolLines(log)).toHaveLength(2 * N);
    const after = rawAttempts(p.db);
    expect(after.map((a) => [a.sample_id, a.status, a.output])).toEqual(
      expected.map((a) => [a.sample_id, a.status, a.output]),
    );
  }, 120_000);
});
