import { existsSync, readFileSync, readdirSync } from "node:fs";
import { join, resolve } from "node:path";
import { createOpenAI } from "@ai-sdk/openai";
import Database from "better-sqlite3";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli, startCli } from "./helpers/cli.js";
import { perTest, rawAttempts, withAiSdk } from "./helpers/eval-project.js";
import { recordLoads } from "./helpers/loaded-modules.js";
import { startMockOpenAI, type MockAction, type MockOpenAI } from "./helpers/mock-openai.js";
import { chatCompletion } from "../src/solvers/chat-completion.js";
import { isSolverError, type SolverError } from "../src/solvers/solver-error.js";
import { until } from "./helpers/wait.js";

const N = 6;

/** An eval over `@ai-sdk/openai`'s chat model pointed at the mock, through solvers.chat. */
const CHAT_EVAL = `
import { createOpenAI } from "@ai-sdk/openai";
import { defineEval, scorers, solvers } from "stet";
const openai = createOpenAI({ baseURL: process.env.MOCK_URL, apiKey: "sk-ai-sdk-secret" });
export default defineEval({
  name: "ai-sdk-chat",
  dataset: "./data.jsonl",
  solver: solvers.chat({ model: openai.chat("gpt-4o-mini"), system: "Answer.", temperature: 0 }),
  scorers: [
    function same({ sample, output }) { return output === "answer to " + sample.input; },
    scorers.modelGraded({ model: openai.chat("gpt-4o"), name: "judge" }),
  ],
});
`;

/** ctx.chat with an AI SDK model as its model. */
const CTX_CHAT_EVAL = `
import { createOpenAI } from "@ai-sdk/openai";
import { defineEval } from "stet";
const openai = createOpenAI({ baseURL: process.env.MOCK_URL, apiKey: "sk-ai-sdk-secret" });
export default defineEval({
  name: "ai-sdk-ctx-chat",
  dataset: "./data.jsonl",
  solver: async (sample, ctx) =>
    (await ctx.chat({ model: openai.chat("gpt-4o-mini"), messages: [{ role: "user", content: sample.input }] })).content,
  scorers: [function same({ sample, output }) { return output === "answer to " + sample.input; }],
});
`;

/**
 * A two-tool agent written with the AI SDK's own loop over ctx.languageModel; its tools run as
 * ctx.step steps (logged, so a re-run tool shows). Its output is what generateText returned.
 */
const AGENT_EVAL = `
import { appendFileSync } from "node:fs";
import { createOpenAI } from "@ai-sdk/openai";
import { generateText, jsonSchema, stepCountIs, tool } from "ai";
import { defineEval } from "stet";
const openai = createOpenAI({ baseURL: process.env.MOCK_URL, apiKey: "sk-ai-sdk-secret" });
const schema = jsonSchema({ type: "object", properties: { a: { type: "number" }, b: { type: "number" } }, required: ["a", "b"] });
export default defineEval({
  name: "ai-sdk-agent",
  dataset: "./data.jsonl",
  concurrency: ${N},
  solver: async (sample, ctx) => {
    const run = (name, fn) => (input) => ctx.step(name, input, () => {
      appendFileSync(process.env.TOOL_LOG, sample.id + " " + name + "\\n");
      return fn(input);
    });
    const result = await generateText({
      model: ctx.languageModel(openai.chat("gpt-4o-mini")),
      prompt: sample.input,
      tools: {
        add: tool({ description: "a + b", inputSchema: schema, execute: run("add", ({ a, b }) => a + b) }),
        multiply: tool({ description: "a * b", inputSchema: schema, execute: run("multiply", ({ a, b }) => a * b) }),
      },
      stopWhen: stepCountIs(5),
      maxRetries: 0,
    });
    const calls = result.steps.flatMap((s) => s.toolCalls.map((c) => [c.toolCallId, c.toolName, c.input]));
    return { answer: result.text, steps: result.steps.length, calls };
  },
  scorers: [function correct({ sample, output }) { return output.answer === sample.target; }],
});
`;

const data = Array.from({ length: N }, (_, i) =>
  JSON.stringify({ id: `s${i}`, input: `task ${i}`, target: `result ${(i + 3) * 2}` }),
).join("\n");

type WireMessage = { role: string; content?: unknown; tool_call_id?: unknown };
const toolCall = (id: string, name: string, args: object): MockAction => ({
  message: {
    content: null,
    tool_calls: [{ id, type: "function", function: { name, arguments: JSON.stringify(args) } }],
  },
  finishReason: "tool_calls",
  usage: { prompt_tokens: 100, completion_tokens: 10 },
});
const round = (body: Record<string, unknown>) =>
  (body.messages as WireMessage[]).filter((m) => m.role === "tool").length;

let hold = false;
let mock: MockOpenAI;
beforeAll(async () => {
  mock = await startMockOpenAI({
    usage: { prompt_tokens: 1000, completion_tokens: 100 },
    respond: ({ body, key }) => {
      if (!Array.isArray(body.tools)) {
        const user = String((body.messages as WireMessage[]).at(-1)?.content);
        if (user.includes("<submission>")) return { reply: "It agrees.\nGRADE: C" };
        return { reply: `answer to ${user}` };
      }
      const x = Number(/\d+/.exec(key)?.[0]);
      const results = (body.messages as WireMessage[]).filter((m) => m.role === "tool");
      switch (round(body)) {
        case 0:
          return toolCall(`add-${x}`, "add", { a: x, b: 3 });
        case 1:
          return toolCall(`mul-${x}`, "multiply", { a: Number(results[0]?.content), b: 2 });
        default:
          return hold ? { hang: true } : { reply: `result ${String(results[1]?.content)}` };
      }
    },
  });
});
afterAll(() => mock.close());

const { project, track } = perTest();
/** A user project that installed the AI SDK. */
const aiProject = (files: Record<string, string>) => withAiSdk(project(files));
const lines = (path: string) =>
  existsSync(path) ? readFileSync(path, "utf8").split("\n").filter(Boolean) : [];
const perRound = () => {
  const counts = [0, 0, 0];
  for (const r of mock.requests) counts[Math.min(round(r.body), 2)]!++;
  return counts;
};

describe("AI SDK models, with the real CLI", () => {
  it("solvers.chat over @ai-sdk/openai's chat model: scored, usage recorded and priced by the model id, the run's config naming only provider and model id", async () => {
    mock.reset();
    const p = aiProject({ "eval.mjs": CHAT_EVAL, "data.jsonl": data });
    const r = await runCli(["run", "eval.mjs"], { cwd: p.dir, env: { MOCK_URL: mock.url } });
    expect(r.code, r.stderr + r.stdout).toBe(0);
    const attempts = rawAttempts(p.db);
    expect(attempts.map((a) => a.status)).toEqual(Array(N).fill("scored"));
    expect(JSON.parse(String(attempts[0]!.scores))).toMatchObject([
      { scorer: "same", value: 1 },
      { scorer: "judge", value: 1, metadata: { judgeModel: "gpt-4o" } },
    ]);
    // 1000 input and 100 output tokens at gpt-4o-mini's list price (0.15 and 0.6 per 1M), and
    // the judge's at gpt-4o's (2.5 and 10).
    expect(attempts[0]).toMatchObject({ input_tokens: 2000, output_tokens: 200 });
    const cost = (1000 * 0.15 + 100 * 0.6 + 1000 * 2.5 + 100 * 10) / 1e6;
    expect(attempts[0]!.cost_usd).toBeCloseTo(cost, 12);
    expect(mock.requests).toHaveLength(2 * N);
    expect(mock.requests[0]!.headers.authorization).toBe("Bearer sk-ai-sdk-secret");
    const runId = /^run (r_\w+)/m.exec(r.stdout)?.[1] ?? "";
    const shown = await runCli(["show", runId, "--json"], { cwd: p.dir });
    expect(shown.code, shown.stderr).toBe(0);
    expect(shown.stdout).not.toContain("sk-ai-sdk-secret");
    const { config } = JSON.parse(shown.stdout) as { config: { solver: unknown } };
    expect(config.solver).toEqual({
      kind: "chat",
      model: "gpt-4o-mini",
      provider: "openai.chat",
      system: "Answer.",
      temperature: 0,
    });
  }, 60_000);

  it("ctx.chat with an AI SDK model: the call is journaled by the model's provider string and id, and priced", async () => {
    mock.reset();
    const p = aiProject({ "eval.mjs": CTX_CHAT_EVAL, "data.jsonl": data });
    const r = await runCli(["run", "eval.mjs"], { cwd: p.dir, env: { MOCK_URL: mock.url } });
    expect(r.code, r.stderr + r.stdout).toBe(0);
    expect(rawAttempts(p.db).map((a) => [a.status, a.input_tokens])).toEqual(
      Array(N).fill(["scored", 1000]),
    );
    const conn = new Database(p.db, { readonly: true });
    const steps = conn.prepare("SELECT kind, input, cost_usd FROM journal").all() as {
      kind: string;
      input: string;
      cost_usd: number;
    }[];
    conn.close();
    expect(steps).toHaveLength(N);
    expect(steps[0]).toMatchObject({ kind: "chat" });
    expect(steps[0]!.cost_usd).toBeCloseTo((1000 * 0.15 + 100 * 0.6) / 1e6, 12);
    expect(JSON.parse(steps[0]!.input)).toMatchObject({
      model: "gpt-4o-mini",
      provider: "openai.chat",
    });
    expect(steps[0]!.input).not.toContain("sk-ai-sdk-secret");
  }, 60_000);

  it("an agent on generateText over ctx.languageModel: SIGKILLed mid-trajectory and resumed, only the calls in flight are bought again and the outputs equal an uninterrupted run's", async () => {
    mock.reset();
    hold = false;
    const plain = aiProject({ "eval.mjs": AGENT_EVAL, "data.jsonl": data });
    const plainEnv = { MOCK_URL: mock.url, TOOL_LOG: join(plain.dir, "tools.log") };
    const clean = await runCli(["run", "eval.mjs"], { cwd: plain.dir, env: plainEnv });
    expect(clean.code, clean.stderr + clean.stdout).toBe(0);
    const expected = rawAttempts(plain.db);
    expect(expected.map((a) => a.status)).toEqual(Array(N).fill("scored"));
    expect(JSON.parse(String(expected[1]!.output))).toEqual({
      answer: "result 8",
      steps: 3,
      calls: [
        ["add-1", "add", { a: 1, b: 3 }],
        ["mul-1", "multiply", { a: 4, b: 2 }],
      ],
    });
    expect(perRound()).toEqual([N, N, N]);
    // Every model call is counted in the attempt's usage: two tool rounds and the answer.
    expect(expected[1]).toMatchObject({
      input_tokens: 2 * 100 + 1000,
      output_tokens: 2 * 10 + 100,
    });

    mock.reset();
    hold = true;
    const p = aiProject({ "eval.mjs": AGENT_EVAL, "data.jsonl": data });
    const log = join(p.dir, "tools.log");
    const env = { MOCK_URL: mock.url, TOOL_LOG: log };
    const cli = startCli(["run", "eval.mjs"], { cwd: p.dir, env });
    const runId = (await cli.waitFor(/^run (r_\w+)/m))[1]!;
    await until(() => perRound()[2] === N, `${N} calls in flight`, 60_000);
    cli.child.kill("SIGKILL");
    expect((await cli.done).signal).toBe("SIGKILL");
    expect(lines(log)).toHaveLength(2 * N);
    hold = false;

    const resumed = await runCli(["resume", runId], { cwd: p.dir, env });
    expect(resumed.code, resumed.stderr + resumed.stdout).toBe(0);
    // The two tool rounds replayed from the journal; only the N calls in flight went out again.
    expect(perRound()).toEqual([N, N, 2 * N]);
    expect(lines(log)).toHaveLength(2 * N);
    const after = rawAttempts(p.db);
    expect(after.map((a) => [a.sample_id, a.status, a.output])).toEqual(
      expected.map((a) => [a.sample_id, a.status, a.output]),
    );
    // An attempt's usage is its whole trajectory, the replayed calls included.
    const tokens = (rows: typeof after) => rows.map((a) => [a.input_tokens, a.output_tokens]);
    expect(tokens(after)).toEqual(tokens(expected));
  }, 120_000);

  it("an eval that does not use the AI SDK loads none of it, nor stet's adapter; one that does loads both", async () => {
    mock.reset();
    const plainEval = CHAT_EVAL.replace(/^import \{ createOpenAI.*$/m, "")
      .replace(/^const openai = .*$/m, "")
      .replace('openai.chat("gpt-4o-mini")', '"gpt-4o-mini", baseURL: process.env.MOCK_URL')
      .replace('openai.chat("gpt-4o")', '"gpt-4o", baseURL: process.env.MOCK_URL');
    const loaded = async (source: string): Promise<string[]> => {
      const p = aiProject({ "eval.mjs": source, "data.jsonl": data });
      // A load hook records every module the CLI process loads (dist's chunks as their sources).
      const loads = track(recordLoads());
      const env = { MOCK_URL: mock.url, ...loads.env };
      const r = await runCli(["run", "eval.mjs"], { cwd: p.dir, env });
      expect(r.code, r.stderr + r.stdout).toBe(0);
      return loads.modules();
    };
    const aiSdk = /node_modules\/(ai|@ai-sdk\/[\w-]+)\/|^src\/solvers\/ai-sdk-/;
    const plain = await loaded(plainEval);
    expect(plain).toContain("src/solvers/chat.ts");
    expect(plain.filter((m) => aiSdk.test(m))).toEqual([]);
    const used = await loaded(CHAT_EVAL);
    expect(used).toContain("src/solvers/ai-sdk-model.ts");
    expect(used.filter((m) => /node_modules\/@ai-sdk\/openai\//.test(m))).not.toEqual([]);
  }, 60_000);

  it("stet's build imports nothing of the AI SDK statically or dynamically", () => {
    const dist = resolve(import.meta.dirname, "../dist");
    const files = readdirSync(dist, { recursive: true, encoding: "utf8" }).filter((f) =>
      f.endsWith(".js"),
    );
    expect(files.length).toBeGreaterThan(10);
    for (const file of files) {
      const text = readFileSync(join(dist, file), "utf8");
      expect(text, file).not.toMatch(/(from|import\()\s*["'](ai|@ai-sdk\/[\w-]+)["']/);
    }
  });
});

describe("errors of a real AI SDK provider package, classified by stet's policy", () => {
  let server: MockOpenAI;
  beforeAll(async () => {
    server = await startMockOpenAI({
      respond: ({ key, n }) => {
        if (key === "busy" && n === 1) return { status: 429, retryAfter: "0" };
        if (key === "denied") return { status: 401 };
        return { reply: "ok" };
      },
    });
  });
  afterAll(() => server.close());
  const model = () => createOpenAI({ baseURL: server.url, apiKey: "k" }).chat("gpt-4o-mini");
  const ask = (content: string, onRetry?: () => void) =>
    chatCompletion({ model: model(), messages: [{ role: "user", content }], onRetry });

  it("a 429 is retried (counted), a 401 fails at once as a configuration fault", async () => {
    let retries = 0;
    const reply = await ask("busy", () => retries++);
    expect(reply).toMatchObject({ content: "ok", model: "gpt-4o-mini", requests: 2 });
    expect(retries).toBe(1);

    const denied = (await ask("denied").catch((e: unknown) => e)) as SolverError;
    expect(isSolverError(denied, "provider")).toBe(true);
    expect(denied.configuration).toMatchObject({ cause: "http-status", status: 401 });
    expect(server.requests.filter((r) => r.key === "denied")).toHaveLength(1);
  });

  it("a refused connection is a configuration fault, not retried", async () => {
    const closed = await startMockOpenAI();
    const url = closed.url;
    await closed.close();
    const gone = createOpenAI({ baseURL: url, apiKey: "k" }).chat("gpt-4o-mini");
    const error = (await chatCompletion({
      model: gone,
      messages: [{ role: "user", content: "x" }],
    }).catch((e: unknown) => e)) as SolverError;
    expect(error.configuration).toMatchObject({ cause: "connection-refused" });
  });
});
