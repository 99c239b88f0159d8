import Database from "better-sqlite3";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { RunReport } from "../src/core/events.js";
import { runCli } from "./helpers/cli.js";
import { perTest, rawAttempts } from "./helpers/eval-project.js";
import { startMockOpenAI, type MockOpenAI } from "./helpers/mock-openai.js";

const CALLS = 6;
/** Each failing call is re-sent this many times by the HTTP layer before it gives up. */
const HTTP_RETRIES = 2;

/**
 * A deterministic agent of six ctx.chat calls per sample: each call's user message names the
 * sample and the call ("s2 call 6"), so the server can count requests per sample and call.
 */
const evalFile = (model: string, n: number) => `
import { defineEval } from "stet";
export default defineEval({
  name: "retry-replay",
  dataset: "./data.jsonl",
  retries: 1,
  concurrency: ${n},
  solver: async (sample, ctx) => {
    const messages = [];
    for (let call = 1; call <= ${CALLS}; call++) {
      messages.push({ role: "user", content: sample.id + " call " + call });
      const reply = await ctx.chat({
        model: "${model}",
        baseURL: process.env.MOCK_URL,
        messages,
        maxRetries: ${HTTP_RETRIES},
      });
      messages.push({ role: "assistant", content: reply.content });
    }
    return messages.at(-1).content;
  },
  scorers: [function answered({ output }) { return output.startsWith("reply to"); }],
});
`;

const dataOf = (n: number) =>
  Array.from({ length: n }, (_, i) => JSON.stringify({ id: `s${i}`, input: i })).join("\n");

/**
 * While set, every sample's 6th call answers 500 (no wait before the re-send), as an error body
 * of the request's wire format.
 */
let failing = true;
let mock: MockOpenAI;
beforeAll(async () => {
  mock = await startMockOpenAI({
    respond: ({ key }) =>
      failing && key.endsWith(` call ${CALLS}`)
        ? { status: 500, retryAfter: 0 }
        : { reply: `reply to ${key}` },
  });
});
afterAll(() => mock.close());

const { project } = perTest();

/** Requests the server received per "sample call" key, e.g. { "s0 call 1": 1, … }. */
function expectedCounts(n: number, perCall: (call: number) => number): Record<string, number> {
  const counts: Record<string, number> = {};
  for (let i = 0; i < n; i++) {
    for (let call = 1; call <= CALLS; call++) counts[`s${i} call ${call}`] = perCall(call);
  }
  return counts;
}

function journalRows(db: string): { sample_id: string; attempt: number | null; step: number }[] {
  const conn = new Database(db, { readonly: true, fileMustExist: true });
  try {
    return conn
      .prepare("SELECT sample_id, attempt, step FROM journal ORDER BY sample_id, attempt, step")
      .all() as { sample_id: string; attempt: number | null; step: number }[];
  } finally {
    conn.close();
  }
}

// The OpenAI format's case over 4 samples; the Anthropic Messages API's over 2, to keep the
// suite fast.
describe.each([
  { format: "openai", model: "gpt-4o-mini", N: 4 },
  { format: "anthropic", model: "anthropic:claude-haiku-4-5", N: 2 },
] as const)(
  "a retry replays what the errored attempt paid for, with the real CLI, $format format",
  ({ format, model, N }) => {
    it("the in-run retry and a resume each re-send only the call that failed, and nothing is spent twice", async () => {
      const p = project({ "eval.mjs": evalFile(model, N), "data.jsonl": dataOf(N) });
      const env = { MOCK_URL: format === "openai" ? mock.url : mock.anthropicURL };
      failing = true;
      mock.reset();
      const series = 1 + HTTP_RETRIES;

      // (a) Every sample's 6th call fails past its HTTP retries: attempt 1 errors, and the eval's
      // one retry replays calls 1-5 from attempt 1's journal and sends one more series of call 6.
      const run = await runCli(["run", "eval.mjs", "--json"], { cwd: p.dir, env });
      expect(run.code, run.stderr + run.stdout).toBe(3);
      const runId = (JSON.parse(run.stdout) as RunReport).runId;
      expect(mock.counts()).toEqual(expectedCounts(N, (c) => (c === CALLS ? 2 * series : 1)));
      const errored = rawAttempts(p.db);
      expect(errored.map((a) => [a.sample_id, a.attempt, a.status])).toEqual(
        Array.from({ length: N }, (_, i) => [
          [`s${i}`, 1, "error"],
          [`s${i}`, 2, "error"],
        ]).flat(),
      );
      expect(errored.every((a) => String(a.error).includes('"type":"provider"'))).toBe(true);
      expect(mock.requests.every((r) => r.format === format)).toBe(true);
      // The retry's journal is its whole trajectory: the five calls it replayed are bound to it.
      const perAttempt = (rows: ReturnType<typeof journalRows>, sample: string, attempt: number) =>
        rows.filter((r) => r.sample_id === sample && r.attempt === attempt).map((r) => r.step);
      const afterRun = journalRows(p.db);
      expect(perAttempt(afterRun, "s0", 1)).toEqual([0, 1, 2, 3, 4]);
      expect(perAttempt(afterRun, "s0", 2)).toEqual([0, 1, 2, 3, 4]);

      // (b) The server is fixed: the resume replays calls 1-5 of each sample's latest errored
      // attempt and buys only the 6th.
      failing = false;
      mock.reset();
      const resumed = await runCli(["resume", runId, "--json"], { cwd: p.dir, env });
      expect(resumed.code, resumed.stderr + resumed.stdout).toBe(0);
      expect(mock.counts()).toEqual(
        Object.fromEntries(Array.from({ length: N }, (_, i) => [`s${i} call ${CALLS}`, 1])),
      );
      const final = rawAttempts(p.db).filter((a) => a.attempt === 3);
      expect(final.map((a) => [a.sample_id, a.status, a.output])).toEqual(
        Array.from({ length: N }, (_, i) => [`s${i}`, "scored", `"reply to s${i} call ${CALLS}"`]),
      );
      const afterResume = journalRows(p.db);
      expect(perAttempt(afterResume, "s0", 3)).toEqual([0, 1, 2, 3, 4, 5]);

      // Spend: every call was bought once (10 input, 5 output tokens each) and counts in the usage
      // of the one attempt that bought it; the calls replayed are reused, never spent again.
      const report = JSON.parse(resumed.stdout) as RunReport;
      expect(report.usage.spentNow).toMatchObject({ inputTokens: 10 * N, outputTokens: 5 * N });
      expect(report.usage.totalSpent).toMatchObject({
        inputTokens: 10 * CALLS * N,
        outputTokens: 5 * CALLS * N,
      });
      expect(report.journal).toMatchObject({
        replayed: (CALLS - 1) * N,
        reused: { inputTokens: 10 * (CALLS - 1) * N, outputTokens: 5 * (CALLS - 1) * N },
      });
      const bySample = (sample: string) =>
        rawAttempts(p.db)
          .filter((a) => a.sample_id === sample)
          .map((a) => [a.attempt, a.input_tokens]);
      // Attempt 2 counts nothing of its own (calls 1-5 are attempt 1's, its call 6 failed).
      expect(bySample("s0")).toEqual([
        [1, 10 * (CALLS - 1)],
        [2, 0],
        [3, 10],
      ]);

      // (c) Per sample, the export shows the outcome's whole trajectory, as an uninterrupted run
      // of the same eval does: six calls, of which the five carried from the errored attempts
      // count as replayed.
      const exportUsage = async (id: string) => {
        const exported = await runCli(["export", id, "--format", "jsonl"], { cwd: p.dir, env });
        expect(exported.code, exported.stderr).toBe(0);
        return exported.stdout
          .trim()
          .split("\n")
          .map((line) => JSON.parse(line) as { sampleId: string; usage: Record<string, unknown> });
      };
      const uninterrupted = await runCli(["run", "eval.mjs", "--json"], { cwd: p.dir, env });
      expect(uninterrupted.code, uninterrupted.stderr).toBe(0);
      const expected = await exportUsage((JSON.parse(uninterrupted.stdout) as RunReport).runId);
      const got = await exportUsage(runId);
      expect(got.map((g) => g.sampleId)).toEqual(expected.map((e) => e.sampleId));
      for (const [i, { usage }] of got.entries()) {
        const { costUsd, reused, ...tokens } = usage;
        const { costUsd: expectedCost, ...expectedTokens } = expected[i]!.usage;
        expect(tokens).toEqual({
          ...expectedTokens,
          inputTokens: 10 * CALLS,
          outputTokens: 5 * CALLS,
        });
        expect(costUsd).toBeCloseTo(expectedCost as number, 15);
        expect(reused).toMatchObject({
          inputTokens: 10 * (CALLS - 1),
          outputTokens: 5 * (CALLS - 1),
        });
      }
    }, 120_000);
  },
);
