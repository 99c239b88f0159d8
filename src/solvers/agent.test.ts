import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { createOpenAI } from "@ai-sdk/openai";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import * as z from "zod";
import { isStetError } from "../core/errors.js";
import type { SolverContext, SolverResult } from "../core/eval.js";
import type { Json } from "../core/json.js";
import type { Sample } from "../core/types.js";
import { context, type Spent } from "../engine/solver-context.js";
import { StepJournal } from "../engine/step-journal.js";
import type { JournalEntry, StepDiscard, StepDraft } from "../store/types.js";
import {
  startMockOpenAI,
  type MockAction,
  type MockOpenAI,
} from "../../test/helpers/mock-openai.js";
import { agent, type AgentSolverOptions } from "./agent.js";
import { callModel } from "./model-call.js";
import { isSolverError } from "./solver-error.js";

const KEY = "sk-agent-test-do-not-leak-42";
const key = { sampleId: "s1", epoch: 1 };
const sample: Sample = { id: "s1", input: "what is (2 + 3) * 4?" };

type Wire = { role: string; content?: unknown; tool_call_id?: string; tool_calls?: unknown[] };
type Script = (round: number, messages: Wire[]) => MockAction;

/** A reply whose message asks for these tool calls, in OpenAI's wire format. */
const calls = (...list: [id: string, name: string, args: object | string][]): MockAction => ({
  message: {
    content: null,
    tool_calls: list.map(([id, name, args]) => ({
      id,
      type: "function",
      function: { name, arguments: typeof args === "string" ? args : JSON.stringify(args) },
    })),
  },
  finishReason: "tool_calls",
});

/** add, then multiply and shout in one reply, then the answer. */
const threeTurns: Script = (round) =>
  [
    calls(["c1", "add", { a: 2, b: 3 }]),
    calls(["c2", "multiply", { a: 5, b: 4 }], ["c3", "shout", { text: "done" }]),
    { reply: "the answer is 20" },
  ][Math.min(round, 2)]!;

let mock: MockOpenAI;
let script: Script = threeTurns;
beforeAll(async () => {
  mock = await startMockOpenAI({
    respond: ({ body }) => {
      const messages = body.messages as Wire[];
      return script(messages.filter((m) => m.role === "assistant").length, messages);
    },
  });
});
afterEach(() => {
  script = threeTurns;
  mock.reset();
});
afterAll(() => mock.close());

/** Every tool execution, in order: what a resumed sample must not repeat. */
let executed: string[] = [];
afterEach(() => (executed = []));

const tools = {
  add: {
    description: "a + b",
    parameters: z.object({ a: z.number(), b: z.number() }),
    execute: ({ a, b }: { a: number; b: number }) => {
      executed.push("add");
      return a + b;
    },
  },
  multiply: {
    description: "a * b",
    parameters: {
      type: "object",
      properties: { a: { type: "number" }, b: { type: "number" } },
      required: ["a", "b"],
    },
    execute: (args: { [key: string]: Json }) => {
      executed.push("multiply");
      return { product: Number(args.a) * Number(args.b) };
    },
  },
  shout: {
    parameters: { type: "object", properties: { text: { type: "string" } } },
    execute: async (args: { [key: string]: Json }, ctx: SolverContext & { toolCallId: string }) => {
      executed.push("shout");
      // A step inside a tool is part of the tool's one journaled step.
      const loud = await ctx.step("upper", args, () => String(args.text).toUpperCase());
      return `${loud} (${ctx.toolCallId})`;
    },
  },
};

type Options = Partial<AgentSolverOptions<Record<string, unknown>>>;
const solver = (options: Options = {}) =>
  agent({ model: "gpt-4o-mini", baseURL: mock.url, apiKey: KEY, tools, ...options });

/** One attempt of `s1` through the engine's own context and step journal. */
async function attempt(
  options: Options = {},
  { entries = [], model }: { entries?: JournalEntry[]; model?: string } = {},
) {
  const written: StepDraft[] = [];
  const journal = new StepJournal({
    key,
    entries,
    write: (draft: StepDraft | StepDiscard) => {
      if ("step" in draft) written.push(draft);
      return Promise.resolve();
    },
    redact: (value) => ({ value, found: [] }),
  });
  const spent: Spent = { usage: [], retries: 0 };
  const task = { callModel, runId: "r_1", key, ...(model === undefined ? {} : { model }) };
  const ctx = context(task, new AbortController().signal, spent, journal);
  const result = (await solver(options)(sample, ctx)) as SolverResult;
  return { result, written, journal, spent };
}

const asEntries = (drafts: StepDraft[]): JournalEntry[] =>
  drafts.map(({ truncate: _t, ...draft }) => ({ ...draft, runId: "r_1", attempt: null }));

const wire = (i: number) =>
  mock.requests[i]!.body as { messages: Wire[] } & Record<string, unknown>;

async function thrownBy(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => {
      throw new Error("expected a rejection");
    },
    (error: unknown) => error,
  );
}

describe("solvers.agent", () => {
  it("runs the loop: each reply's tool calls in its order, results by call id, until an answer", async () => {
    const { result, written, spent } = await attempt({ system: "Use the tools." });
    expect(result.output).toBe("the answer is 20");
    expect(executed).toEqual(["add", "multiply", "shout"]);
    expect(result.transcript).toEqual([
      { role: "system", content: "Use the tools." },
      { role: "user", content: sample.input },
      {
        role: "assistant",
        content: "",
        toolCalls: [{ id: "c1", name: "add", arguments: { a: 2, b: 3 } }],
      },
      { role: "tool", toolCallId: "c1", content: "5" },
      {
        role: "assistant",
        content: "",
        toolCalls: [
          { id: "c2", name: "multiply", arguments: { a: 5, b: 4 } },
          { id: "c3", name: "shout", arguments: { text: "done" } },
        ],
      },
      { role: "tool", toolCallId: "c2", content: '{"product":20}' },
      { role: "tool", toolCallId: "c3", content: "DONE (c3)" },
      { role: "assistant", content: "the answer is 20" },
    ]);
    // Every model call and every tool execution is a journal step; a tool's inner step is not.
    expect(written.map((d) => [d.kind, d.name, d.input])).toEqual([
      ["chat", "chat", expect.anything()],
      ["step", "tool:add", { a: 2, b: 3 }],
      ["chat", "chat", expect.anything()],
      ["step", "tool:multiply", { a: 5, b: 4 }],
      ["step", "tool:shout", { text: "done" }],
      ["chat", "chat", expect.anything()],
    ]);
    expect(written[1]!.result).toBe(5);
    // The wire: tools as function tools (the zod schema as JSON Schema), results by tool_call_id.
    expect(mock.requests).toHaveLength(3);
    expect(wire(0).tools).toEqual([
      {
        type: "function",
        function: {
          name: "add",
          description: "a + b",
          parameters: {
            type: "object",
            properties: { a: { type: "number" }, b: { type: "number" } },
            required: ["a", "b"],
          },
        },
      },
      expect.objectContaining({ function: expect.objectContaining({ name: "multiply" }) }),
      expect.objectContaining({ function: expect.objectContaining({ name: "shout" }) }),
    ]);
    expect(wire(0)).not.toHaveProperty("parallel_tool_calls");
    expect(wire(2).messages.filter((m) => m.role === "tool")).toEqual([
      { role: "tool", tool_call_id: "c1", content: "5" },
      { role: "tool", tool_call_id: "c2", content: '{"product":20}' },
      { role: "tool", tool_call_id: "c3", content: "DONE (c3)" },
    ]);
    expect(mock.requests[0]!.headers.authorization).toBe(`Bearer ${KEY}`);
    expect(spent.usage).toHaveLength(3);
  });

  it("a resumed sample replays its journal: no model request, no tool run, the same result", async () => {
    const first = await attempt();
    mock.reset();
    executed = [];
    const again = await attempt({}, { entries: asEntries(first.written) });
    expect(mock.requests).toHaveLength(0);
    expect(executed).toEqual([]);
    expect(again.result).toEqual(first.result);
    expect(again.journal.replayed).toBe(6);
  });

  it("killed after its first tool step, it resumes at the second model call", async () => {
    const first = await attempt();
    mock.reset();
    executed = [];
    const again = await attempt({}, { entries: asEntries(first.written.slice(0, 2)) });
    expect(mock.requests).toHaveLength(2);
    expect(executed).toEqual(["multiply", "shout"]);
    expect(again.result).toEqual(first.result);
  });

  it("a tool that throws: the model is told its message, and a resume replays the failure", async () => {
    const failing = {
      ...tools,
      multiply: {
        ...tools.multiply,
        execute: () => {
          executed.push("multiply");
          throw new Error("overflow in multiply");
        },
      },
    };
    const first = await attempt({ tools: failing });
    expect(first.result.output).toBe("the answer is 20");
    expect(wire(2).messages.filter((m) => m.role === "tool")).toEqual([
      { role: "tool", tool_call_id: "c1", content: "5" },
      { role: "tool", tool_call_id: "c2", content: "Error: overflow in multiply" },
      { role: "tool", tool_call_id: "c3", content: "DONE (c3)" },
    ]);
    expect(first.written[3]).toMatchObject({
      name: "tool:multiply",
      error: { message: "overflow in multiply" },
    });

    mock.reset();
    executed = [];
    const again = await attempt({ tools: failing }, { entries: asEntries(first.written) });
    expect(mock.requests).toHaveLength(0);
    expect(executed).toEqual([]);
    expect(again.result).toEqual(first.result);
  });

  it('onToolError: "fail" ends the sample with a solver error naming the tool', async () => {
    const failing = {
      ...tools,
      add: { ...tools.add, execute: () => Promise.reject(new Error("disk on fire")) },
    };
    const error = await thrownBy(attempt({ tools: failing, onToolError: "fail" }));
    expect(isSolverError(error, "solver")).toBe(true);
    expect((error as Error).message).toBe('tool "add" failed: disk on fire');
    expect(mock.requests).toHaveLength(1);
  });

  it.each([
    [
      "a JSON Schema refuses them",
      calls(["c1", "multiply", { a: "five" }]),
      "Error: invalid arguments for tool \"multiply\": (root): must have required property 'b'; /a: must be number",
    ],
    [
      "a zod schema refuses them",
      calls(["c1", "add", { a: 1 }]),
      'Error: invalid arguments for tool "add": b: Invalid input: expected number, received undefined',
    ],
    [
      "they are not JSON",
      calls(["c1", "add", "{a: 1"]),
      'Error: invalid arguments for tool "add": (root): Invalid input: expected object, received string',
    ],
    [
      "the tool does not exist",
      calls(["c1", "divide", { a: 1, b: 0 }]),
      'Error: there is no tool "divide"; the tools are add, multiply, shout',
    ],
  ])("the model is told when %s, and the tool does not run", async (_, bad, told) => {
    script = (round) => (round === 0 ? bad : { reply: "sorry" });
    const { result, written } = await attempt();
    expect(result.output).toBe("sorry");
    expect(wire(1).messages.at(-1)).toEqual({ role: "tool", tool_call_id: "c1", content: told });
    expect(executed).toEqual([]);
    expect(written.map((d) => d.name)).toEqual(["chat", "chat"]);
  });

  it("maxTurns ends the loop: the last reply's text is the output, its tool calls are not run", async () => {
    script = (round) => calls([`c${round}`, "add", { a: round, b: 1 }]);
    const { result } = await attempt({ maxTurns: 3 });
    expect(mock.requests).toHaveLength(3);
    expect(executed).toEqual(["add", "add"]);
    expect(result.output).toBe("");
    expect((result.transcript as Json[]).at(-1)).toEqual({
      role: "system",
      content:
        "stet: the agent loop stopped at maxTurns (3 model calls); the last reply's tool call was not run",
    });
  });

  it("sends toolChoice and parallelToolCalls in the OpenAI format; --model wins over the eval's model", async () => {
    script = () => ({ reply: "ok" });
    await attempt(
      { toolChoice: "required", parallelToolCalls: false, params: { seed: 7 } },
      { model: "openai:gpt-4.1" },
    );
    expect(wire(0)).toMatchObject({
      model: "gpt-4.1",
      tool_choice: "required",
      parallel_tool_calls: false,
      seed: 7,
    });
  });

  it("describes the model, system, tools with their schemas, maxTurns: never the key", () => {
    const described = solver({ system: "Use the tools.", maxTurns: 8 }).describe!();
    expect(described).toMatchObject({
      kind: "agent",
      model: "gpt-4o-mini",
      baseURL: mock.url,
      system: "Use the tools.",
      maxTurns: 8,
      onToolError: "tell-model",
      tools: {
        add: {
          description: "a + b",
          parameters: { type: "object", required: ["a", "b"] },
        },
        multiply: { description: "a * b", parameters: tools.multiply.parameters },
        shout: { parameters: tools.shout.parameters },
      },
    });
    expect(JSON.stringify(described)).not.toContain(KEY);
    expect(solver().secrets!()).toEqual([expect.objectContaining({ value: KEY })]);
  });

  it.each<[string, Record<string, unknown>, RegExp]>([
    ["no tools", { tools: {} }, /needs `tools`/],
    ["a tool without execute", { tools: { f: { parameters: {} } } }, /tool "f" needs an `execute/],
    ["a bad tool name", { tools: { "a b": tools.add } }, /tool "a b": a tool's name/],
    [
      "parameters that are not a schema",
      { tools: { f: { parameters: [], execute: (): number => 1 } } },
      /JSON Schema \(an object\) or a zod 4 schema/,
    ],
    [
      "a zod 3 schema",
      { tools: { f: { parameters: { _def: {}, safeParse: () => 1 }, execute: (): number => 1 } } },
      /is a zod 3 schema/,
    ],
    ["maxTurns 0", { maxTurns: 0 }, /maxTurns must be a whole number from 1 to 10000, got 0/],
    [
      "an unknown onToolError",
      { onToolError: "ignore" },
      /onToolError must be "tell-model" or "fail", got "ignore"/,
    ],
  ])("refuses %s with E_CONFIG", (_, options, message) => {
    const error = (() => {
      try {
        solver(options as Options);
      } catch (thrown) {
        return thrown;
      }
    })();
    expect(isStetError(error, "E_CONFIG")).toBe(true);
    expect((error as Error).message).toMatch(message);
  });

  it("two agents may share a tool schema that has an $id", async () => {
    script = () => calls(["c1", "multiply", { a: 1 }]);
    const schema = { $id: "https://example.com/numbers", ...tools.multiply.parameters };
    const shared = { multiply: { ...tools.multiply, parameters: schema } };
    await attempt({ tools: shared, maxTurns: 2 });
    const { result } = await attempt({ tools: shared, maxTurns: 2 });
    expect((result.transcript as Json[])[2]).toMatchObject({
      content:
        "Error: invalid arguments for tool \"multiply\": (root): must have required property 'b'",
    });
  });

  it("a JSON Schema that does not compile fails the sample naming the tool", async () => {
    script = () => calls(["c1", "broken", {}]);
    const broken = { broken: { parameters: { type: "no-such-type" }, execute: () => 1 } };
    const error = await thrownBy(attempt({ tools: broken }));
    expect((error as Error).message).toMatch(
      /^solvers\.agent: tool "broken": its parameters are not a valid JSON Schema/,
    );
  });
});

describe("solvers.agent with other providers", () => {
  let server: Server;
  let url = "";
  const bodies: Record<string, unknown>[] = [];
  beforeAll(async () => {
    // Anthropic's Messages API: a tool_use, then the answer.
    server = createServer((req, res) => {
      let text = "";
      req.on("data", (chunk: Buffer) => (text += chunk.toString("utf8")));
      req.on("end", () => {
        const body = JSON.parse(text) as { messages: { role: string }[] };
        bodies.push(body);
        const first = body.messages.length === 1;
        res.writeHead(200, { "content-type": "application/json" });
        res.end(
          JSON.stringify({
            content: first
              ? [{ type: "tool_use", id: "tu1", name: "add", input: { a: 2, b: 3 } }]
              : [{ type: "text", text: "5" }],
            stop_reason: first ? "tool_use" : "end_turn",
            usage: { input_tokens: 10, output_tokens: 2 },
          }),
        );
      });
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  it("Anthropic: tool results as tool_result blocks; parallelToolCalls: false as disable_parallel_tool_use", async () => {
    const { result } = await attempt({
      model: "anthropic:claude-sonnet-4-5",
      baseURL: url,
      parallelToolCalls: false,
    });
    expect(result.output).toBe("5");
    expect(bodies[0]).toMatchObject({
      tool_choice: { type: "auto", disable_parallel_tool_use: true },
    });
    expect(bodies[1]).toMatchObject({
      messages: [
        { role: "user" },
        { role: "assistant", content: [{ type: "tool_use", id: "tu1", name: "add" }] },
        {
          role: "user",
          content: [
            {
              type: "tool_result",
              tool_use_id: "tu1",
              content: [{ type: "text", text: "5" }],
            },
          ],
        },
      ],
    });
  });

  it("an AI SDK model: called through its provider package, parallelToolCalls as its provider option", async () => {
    const openai = createOpenAI({ baseURL: mock.url, apiKey: KEY });
    const { result } = await attempt({
      model: openai.chat("gpt-4o-mini"),
      parallelToolCalls: false,
    });
    expect(result.output).toBe("the answer is 20");
    expect(executed).toEqual(["add", "multiply", "shout"]);
    expect(wire(0)).toMatchObject({ parallel_tool_calls: false });
    expect(wire(2).messages.filter((m) => m.role === "tool")).toHaveLength(3);
  });
});
