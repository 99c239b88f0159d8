import { existsSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli, startCli } from "./helpers/cli.js";
import { perTest, rawAttempts } from "./helpers/eval-project.js";
import { startMockOpenAI, type MockAction, type MockOpenAI } from "./helpers/mock-openai.js";
import { until } from "./helpers/wait.js";

const CONCURRENCY = 3;
const OPENAI_MODEL = "gpt-4o-mini";

/**
 * A three-tool solvers.agent; every tool execution appends a line to TOOL_LOG (what a resumed
 * run must not repeat). The `add` tool's schema is zod's, the others are JSON Schema.
 */
const evalFile = (model: string) => `
import { appendFileSync } from "node:fs";
import * as z from "zod";
import { defineEval, solvers } from "stet";
const ran = (sample, name) => appendFileSync(process.env.TOOL_LOG, sample.id + " " + name + "\\n");
const numbers = { type: "object", properties: { a: { type: "number" }, b: { type: "number" } }, required: ["a", "b"] };
export default defineEval({
  name: "agent",
  dataset: "./data.jsonl",
  concurrency: ${CONCURRENCY},
  solver: solvers.agent({
    model: "${model}",
    baseURL: process.env.MOCK_URL,
    system: "Use the tools.",
    tools: {
      lookup: {
        description: "the number of an id",
        parameters: { type: "object", properties: { id: { type: "number" } }, required: ["id"] },
        execute: ({ id }, ctx) => { ran(ctx.sample, "lookup"); return id * 10; },
      },
      add: {
        description: "a + b",
        parameters: z.object({ a: z.number(), b: z.number() }),
        execute: ({ a, b }, ctx) => { ran(ctx.sample, "add"); return a + b; },
      },
      multiply: {
        description: "a * b",
        parameters: numbers,
        execute: ({ a, b }, ctx) => { ran(ctx.sample, "multiply"); return { product: a * b }; },
      },
    },
  }),
  scorers: [function correct({ sample, output }) { return output === sample.target; }],
});
`;

// Sample i: lookup gives 10i; add and multiply (one reply, two calls) give 10i + 1 and 20i;
// the answer names both.
const EVAL = evalFile(OPENAI_MODEL);
const dataOf = (n: number) =>
  Array.from({ length: n }, (_, i) =>
    JSON.stringify({ id: `s${i}`, input: `task ${i}`, target: `${10 * i + 1} and ${20 * i}` }),
  ).join("\n");
const data = dataOf(10);

const toolCalls = (...calls: [id: string, name: string, args: object][]): MockAction => ({
  toolCalls: calls.map(([id, name, args]) => ({ id, name, arguments: args })),
});

/** Requests after this many (counted since the mock started) hang: they are in flight at a kill. */
let holdAfter: number | null = null;
let mock: MockOpenAI;
beforeAll(async () => {
  mock = await startMockOpenAI({
    // The same script on either wire format: the request's messages in the mock's one view.
    respond: ({ key, index, messages, tools }) => {
      if (holdAfter !== null && index > holdAfter) return { hang: true };
      if (tools.length !== 3) return { status: 400 };
      const x = Number(/\d+/.exec(key)?.[0]);
      const result = (id: string) =>
        messages.find((m) => m.role === "tool" && m.toolCallId === id)?.content;
      switch (messages.filter((m) => m.role === "assistant").length) {
        case 0:
          return toolCalls([`look-${x}`, "lookup", { id: x }]);
        case 1: {
          const n = Number(result(`look-${x}`));
          return toolCalls(
            [`add-${x}`, "add", { a: n, b: 1 }],
            [`mul-${x}`, "multiply", { a: n, b: 2 }],
          );
        }
        default: {
          const product = JSON.parse(String(result(`mul-${x}`))) as { product: number };
          return { reply: `${String(result(`add-${x}`))} and ${product.product}` };
        }
      }
    },
  });
});
afterAll(() => mock.close());

const { project: bare } = perTest();
const ZOD = fileURLToPath(new URL("../node_modules/zod", import.meta.url));
/** A user project that has zod installed, as one writing zod tool schemas would. */
const project = (files: Record<string, string>) => {
  const made = bare(files);
  symlinkSync(ZOD, join(made.dir, "node_modules/zod"), "dir");
  return made;
};
const lines = (path: string) =>
  existsSync(path) ? readFileSync(path, "utf8").split("\n").filter(Boolean) : [];

const stored = (db: string) =>
  rawAttempts(db).map((a) => [a.sample_id, a.attempt, a.status, a.output, a.transcript]);

/** What the last request of sample s1 ends with on the wire: the tool calls and their results. */
const S1_TAIL = {
  openai: [
    {
      role: "assistant",
      content: null,
      tool_calls: [
        { id: "add-1", type: "function", function: { name: "add", arguments: '{"a":10,"b":1}' } },
        {
          id: "mul-1",
          type: "function",
          function: { name: "multiply", arguments: '{"a":10,"b":2}' },
        },
      ],
    },
    { role: "tool", tool_call_id: "add-1", content: "11" },
    { role: "tool", tool_call_id: "mul-1", content: '{"product":20}' },
  ],
  anthropic: [
    {
      role: "assistant",
      content: [
        { type: "tool_use", id: "add-1", name: "add", input: { a: 10, b: 1 } },
        { type: "tool_use", id: "mul-1", name: "multiply", input: { a: 10, b: 2 } },
      ],
    },
    {
      role: "user",
      content: [
        { type: "tool_result", tool_use_id: "add-1", content: [{ type: "text", text: "11" }] },
        {
          type: "tool_result",
          tool_use_id: "mul-1",
          content: [{ type: "text", text: '{"product":20}' }],
        },
      ],
    },
  ],
};

// The acceptance's 3-tool agent over 50 samples on the OpenAI format; the Anthropic format's
// case (tool_use and tool_result blocks) over fewer, to keep the suite fast. Each kill comes
// once `answered` requests were answered (counted since the mock's reset, resumes included).
describe.each([
  { format: "openai", model: OPENAI_MODEL, n: 50, kills: [20, 65, 110] },
  { format: "anthropic", model: "anthropic:claude-haiku-4-5", n: 10, kills: [5, 13, 21] },
] as const)("solvers.agent through the real CLI, $format format", ({ format, model, n, kills }) => {
  it(`SIGKILLed ${kills.length} times mid-run and resumed: outputs and transcripts as uninterrupted, extra requests and tool runs ≤ kills × concurrency`, async () => {
    const files = { "eval.mjs": evalFile(model), "data.jsonl": dataOf(n) };
    const url = format === "openai" ? mock.url : mock.anthropicURL;
    mock.reset();
    const clean = project(files);
    const cleanLog = join(clean.dir, "tools.log");
    const done = await runCli(["run", "eval.mjs"], {
      cwd: clean.dir,
      env: { MOCK_URL: url, TOOL_LOG: cleanLog },
    });
    expect(done.code, done.stderr + done.stdout).toBe(0);
    expect(mock.requests.every((r) => r.format === format)).toBe(true);
    const s1 = mock.requests.filter((r) => r.key === "task 1").at(-1)!.body.messages as unknown[];
    expect(s1.slice(-S1_TAIL[format].length)).toEqual(S1_TAIL[format]);
    const expected = stored(clean.db);
    expect(expected.map(([, , status]) => status)).toEqual(Array(n).fill("scored"));
    expect(JSON.parse(String(expected[1]![4]))).toEqual([
      { role: "system", content: "Use the tools." },
      { role: "user", content: "task 1" },
      {
        role: "assistant",
        content: "",
        toolCalls: [{ id: "look-1", name: "lookup", arguments: { id: 1 } }],
      },
      { role: "tool", toolCallId: "look-1", content: "10" },
      {
        role: "assistant",
        content: "",
        toolCalls: [
          { id: "add-1", name: "add", arguments: { a: 10, b: 1 } },
          { id: "mul-1", name: "multiply", arguments: { a: 10, b: 2 } },
        ],
      },
      { role: "tool", toolCallId: "add-1", content: "11" },
      { role: "tool", toolCallId: "mul-1", content: '{"product":20}' },
      { role: "assistant", content: "11 and 20" },
    ]);
    const cleanRequests = mock.requests.length;
    expect(cleanRequests).toBe(3 * n);
    expect(lines(cleanLog)).toHaveLength(3 * n);

    mock.reset();
    const p = project(files);
    const log = join(p.dir, "tools.log");
    const env = { MOCK_URL: url, TOOL_LOG: log };
    let runId = "";
    for (const [k, answered] of kills.entries()) {
      // Every request after `answered` hangs: once every slot waits on one, the run is killed
      // with CONCURRENCY calls in flight and everything before them journaled.
      holdAfter = answered;
      const cli = startCli(k === 0 ? ["run", "eval.mjs"] : ["resume", runId], { cwd: p.dir, env });
      if (k === 0) runId = (await cli.waitFor(/^run (r_\w+)/m))[1]!;
      await until(
        () => mock.requests.length === answered + CONCURRENCY,
        "every slot in flight",
        60_000,
      );
      cli.child.kill("SIGKILL");
      expect((await cli.done).signal).toBe("SIGKILL");
    }
    holdAfter = null;
    const resumed = await runCli(["resume", runId], { cwd: p.dir, env });
    expect(resumed.code, resumed.stderr + resumed.stdout).toBe(0);

    expect(stored(p.db)).toEqual(expected);
    const bound = kills.length * CONCURRENCY;
    expect(mock.requests.length - cleanRequests).toBeLessThanOrEqual(bound);
    expect(lines(log).length - 3 * n).toBeLessThanOrEqual(bound);
    // Each (sample, tool) ran once here: a kill caught every slot waiting on the model.
    expect([...lines(log)].sort()).toEqual([...lines(cleanLog)].sort());
  }, 120_000);
});

describe("solvers.agent through the real CLI", () => {
  it("a changed tool is a changed solver: a resume is refused, naming the field", async () => {
    const p = project({ "eval.mjs": EVAL, "data.jsonl": data });
    const env = { MOCK_URL: mock.url, TOOL_LOG: join(p.dir, "tools.log") };
    const first = await runCli(["run", "eval.mjs"], { cwd: p.dir, env });
    expect(first.code, first.stderr).toBe(0);
    const runId = /^run (r_\w+)/m.exec(first.stdout)![1]!;
    const changed = EVAL.replace('"the number of an id"', '"the number of a name"');
    expect(changed).not.toBe(EVAL);
    writeFileSync(join(p.dir, "eval.mjs"), changed);
    const refused = await runCli(["resume", runId], { cwd: p.dir, env });
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain(
      'solver.tools.lookup.description: "the number of an id" → "the number of a name"',
    );
  });

  it("a malformed agent is refused at load: the problem and the tool named, exit 1, no stack trace", async () => {
    const add = 'execute: ({ a, b }, ctx) => { ran(ctx.sample, "add"); return a + b; },';
    expect(EVAL).toContain(add);
    const p = project({ "eval.mjs": EVAL.replace(add, ""), "data.jsonl": data });
    mock.reset();
    const result = await runCli(["run", "eval.mjs"], { cwd: p.dir, env: { MOCK_URL: mock.url } });
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(
      'solvers.agent: tool "add" needs an `execute(args, ctx)` function',
    );
    expect(result.stderr).not.toMatch(/\n\s+at /);
    expect(mock.requests).toHaveLength(0);
  });
});
