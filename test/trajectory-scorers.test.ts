import { writeFileSync } from "node:fs";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli } from "./helpers/cli.js";
import { perTest } from "./helpers/eval-project.js";
import {
  startMockOpenAI,
  type MockAction,
  type MockOpenAI,
  type WireFormat,
} from "./helpers/mock-openai.js";

/**
 * Trajectory scorers through the real CLI against a local server with tool calls (OpenAI's format,
 * and for the rescore Anthropic's Messages API too):
 * scored right after the attempt (the trajectory the engine's journal holds), and by `stet
 * rescore` from the store, with no model request; an attempt whose journal was pruned is
 * skipped with the reason, never scored as an empty trajectory.
 */

const N = 6;
const MODEL: Record<WireFormat, string> = {
  openai: "gpt-4o-mini",
  anthropic: "anthropic:claude-haiku-4-5",
};

/**
 * An agent over ctx.chat: it runs each tool call the model asks for as a `tool:<name>` step and
 * answers it by id, until the model answers without tool calls.
 */
function evalFile(scorers: string, journal = "", format: WireFormat = "openai"): string {
  return `
import { defineEval, scorers } from "stet";
const schema = { type: "object", properties: { a: { type: "number" }, b: { type: "number" } } };
const tools = [
  { name: "add", description: "a + b", parameters: schema },
  { name: "multiply", description: "a * b", parameters: schema },
];
const run = { add: ({ a, b }) => a + b, multiply: ({ a, b }) => a * b };
export default defineEval({
  name: "trajectory",
  dataset: "./data.jsonl",
  concurrency: 3,${journal}
  solver: async (sample, ctx) => {
    const messages = [{ role: "user", content: sample.input }];
    for (let round = 0; round < 5; round++) {
      const reply = await ctx.chat({ model: "${MODEL[format]}", baseURL: process.env.MOCK_URL, apiKey: "sk-test", messages, tools });
      messages.push(reply.message);
      if (reply.toolCalls.length === 0) return reply.content;
      for (const call of reply.toolCalls) {
        const result = await ctx.step("tool:" + call.name, call.arguments, () => run[call.name](call.arguments));
        messages.push({ role: "tool", toolCallId: call.id, content: String(result) });
      }
    }
    throw new Error("no final answer");
  },
  scorers: [${scorers}],
});
`;
}

const SCORERS = `
    scorers.toolSequence(["add", "multiply"], { mode: "exact" }),
    scorers.toolCallF1([{ name: "add" }, { name: "multiply" }]),
    scorers.turns({ max: 2 }),`;
const WITH_TOOL_USED = `${SCORERS}
    scorers.toolUsed("multiply"),`;

const data = Array.from({ length: N }, (_, i) =>
  JSON.stringify({ id: `s${i}`, input: `task ${i}` }),
).join("\n");

const toolCall = (id: string, name: string, args: object): MockAction => ({
  toolCalls: [{ id, name, arguments: args }],
});

let mock: MockOpenAI;
beforeAll(async () => {
  // Sample i: the model calls add(i, 3); an odd sample then calls multiply(sum, 2); then it
  // answers. So odd samples make 3 model calls and 2 tool calls, even ones 2 and 1. The same
  // script on either wire format (the request's messages in the mock's one view).
  mock = await startMockOpenAI({
    respond: ({ messages, key }) => {
      const x = Number(/\d+/.exec(key)?.[0]);
      const results = messages.filter((m) => m.role === "tool");
      if (results.length === 0) return toolCall(`add-${x}`, "add", { a: x, b: 3 });
      if (results.length === 1 && x % 2 === 1) {
        return toolCall(`mul-${x}`, "multiply", { a: Number(results[0]!.content), b: 2 });
      }
      return { reply: `result ${String(results.at(-1)!.content)}` };
    },
  });
});
afterAll(() => mock.close());
const { project } = perTest();

type Scores = { scorer: string; value: number | null; skipped?: string }[];

/** Each sample's current scores (its latest scoring's, else its attempt's), by sample id. */
function currentScores(db: string): Map<string, Scores> {
  const conn = new Database(db, { readonly: true, fileMustExist: true });
  try {
    const rows = conn
      .prepare("SELECT sample_id, scores FROM attempts_now ORDER BY sample_id")
      .all() as { sample_id: string; scores: string }[];
    return new Map(rows.map((r) => [r.sample_id, JSON.parse(r.scores) as Scores]));
  } finally {
    conn.close();
  }
}

const valuesOf = (scores: Scores | undefined) =>
  Object.fromEntries((scores ?? []).map((s) => [s.scorer, s.value ?? s.skipped ?? null]));

const urlOf = (format: WireFormat) => (format === "openai" ? mock.url : mock.anthropicURL);

async function startRun(dir: string, format: WireFormat = "openai"): Promise<string> {
  const run = await runCli(["run", "eval.mjs", "--json"], {
    cwd: dir,
    env: { MOCK_URL: urlOf(format) },
  });
  expect(run.code, run.stderr + run.stdout).toBe(0);
  return (JSON.parse(run.stdout) as { runId: string }).runId;
}

async function rescoreToolUsed(
  dir: string,
  runId: string,
  journal = "",
  format: WireFormat = "openai",
): Promise<void> {
  writeFileSync(join(dir, "eval.mjs"), evalFile(WITH_TOOL_USED, journal, format));
  mock.reset();
  const rescored = await runCli(["rescore", runId, "--scorer", "toolUsed"], {
    cwd: dir,
    env: { MOCK_URL: urlOf(format) },
  });
  expect(rescored.code, rescored.stderr + rescored.stdout).toBe(0);
  // The trajectory comes from the store: the rescore asks the model nothing.
  expect(mock.requests).toHaveLength(0);
}

describe("trajectory scorers, with the real CLI", () => {
  it.each(["openai", "anthropic"] as const)(
    "%s format: score the agent's tool calls right after each attempt, and again on a rescore that adds toolUsed with 0 model requests",
    async (format) => {
      const p = project({ "eval.mjs": evalFile(SCORERS, "", format), "data.jsonl": data });
      mock.reset();
      const runId = await startRun(p.dir, format);
      expect(mock.requests).toHaveLength(N * 2 + N / 2);
      expect(mock.requests.every((r) => r.format === format)).toBe(true);
      const odd = { toolSequence: 1, toolCallF1: 1, turns: 0 };
      // An even sample called add only: F1 = 2·1 / (1 + 2).
      const even = { toolSequence: 0, toolCallF1: 2 / 3, turns: 1 };
      const scored = currentScores(p.db);
      for (let i = 0; i < N; i++) {
        expect(valuesOf(scored.get(`s${i}`)), `s${i}`).toEqual(i % 2 === 1 ? odd : even);
      }

      await rescoreToolUsed(p.dir, runId, "", format);
      const rescored = currentScores(p.db);
      for (let i = 0; i < N; i++) {
        const was = i % 2 === 1 ? odd : even;
        expect(valuesOf(rescored.get(`s${i}`)), `s${i}`).toEqual({
          ...was,
          toolUsed: i % 2 === 1 ? 1 : 0,
        });
      }
    },
    120_000,
  );

  it.each([
    [
      'journal: { keep: "open" }',
      '\n  journal: { keep: "open" },',
      [],
      'journal: { keep: "open" }',
    ],
    ["stet resume --prune-journal", "", ["--prune-journal"], "--prune-journal"],
  ])(
    "a rescore of attempts whose journal was pruned (%s) skips toolUsed with the reason, 0 requests",
    async (_how, journal, resumeFlags, named) => {
      const p = project({ "eval.mjs": evalFile(SCORERS, journal), "data.jsonl": data });
      mock.reset();
      const runId = await startRun(p.dir);
      // Scored right after the attempt, the trajectory was there: pruning comes after.
      expect(valuesOf(currentScores(p.db).get("s1"))).toEqual({
        toolSequence: 1,
        toolCallF1: 1,
        turns: 0,
      });
      if (resumeFlags.length > 0) {
        const pruned = await runCli(["resume", runId, ...resumeFlags], { cwd: p.dir });
        expect(pruned.code, pruned.stderr + pruned.stdout).toBe(0);
        expect(pruned.stdout + pruned.stderr).toMatch(
          /journal: \d+ entries of finished attempts deleted/,
        );
      }

      await rescoreToolUsed(p.dir, runId, journal);
      for (const [sampleId, scores] of currentScores(p.db)) {
        const toolUsed = scores.find((s) => s.scorer === "toolUsed");
        expect(toolUsed, sampleId).toMatchObject({ value: null });
        expect(toolUsed?.skipped, sampleId).toContain(`the journal of sample ${sampleId} epoch 1`);
        expect(toolUsed?.skipped, sampleId).toContain(`was pruned (${named})`);
      }
    },
    120_000,
  );
});
