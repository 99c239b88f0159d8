import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli, startCli } from "./helpers/cli.js";
import { openPage, SKIP_BROWSER } from "./helpers/browser.js";
import { perTest, rawAttempts } from "./helpers/eval-project.js";
import { startServe } from "./helpers/serve.js";
import { startMockOpenAI, type MockOpenAI } from "./helpers/mock-openai.js";

const N = 60;
const ROUNDS = 8;
const CONCURRENCY = 6;
const KILLS = 4;
const API_KEY = `sk-stet-journal-${Math.random().toString(36).slice(2)}`;

/**
 * An agent: each round one ctx.chat call and one ctx.step tool call that appends a line to the
 * tool log (so tool executions are countable). DIVERGE_AT=r changes the tool input of round r;
 * BLOCK_AT=r makes round r's chat hang (the process is killed there).
 */
const EVAL = `
import { appendFileSync } from "node:fs";
import { defineEval } from "stet";
export default defineEval({
  name: "agent",
  dataset: "./data.jsonl",
  concurrency: ${CONCURRENCY},
  solver: async (sample, ctx) => {
    const messages = [{ role: "user", content: sample.input + " round 0" }];
    let reply = "";
    for (let r = 0; r < ${ROUNDS}; r++) {
      if (String(r) === process.env.BLOCK_AT) await new Promise(() => setInterval(() => {}, 1000)); // held, and the process kept alive
      reply = (await ctx.chat({ model: "gpt-4o-mini", baseURL: process.env.MOCK_URL, messages })).content;
      const variant = String(r) === process.env.DIVERGE_AT ? "other" : "same";
      const tool = await ctx.step("tool", { r, reply, variant }, () => {
        appendFileSync(process.env.TOOL_LOG, sample.id + " " + r + " " + variant + "\\n");
        return { seen: sample.id + ":" + r };
      });
      messages.push({ role: "assistant", content: reply });
      messages.push({ role: "user", content: sample.input + " round " + (r + 1) + " " + tool.seen });
    }
    return reply;
  },
  scorers: [function finished({ output }) { return typeof output === "string" && output.includes("round ${ROUNDS - 1}"); }],
});
`;

const { project } = perTest();
let mock: MockOpenAI;
beforeAll(async () => {
  // 60 ms a call: a run (480 calls, 6 at a time) lasts ~5 s, so the kills, aimed at 10 to 60
  // more steps, land mid-run even when a loaded machine delays this process's polling.
  mock = await startMockOpenAI({ latencyMs: 60 });
});
afterAll(() => mock.close());

const data = (n: number) =>
  Array.from({ length: n }, (_, i) => JSON.stringify({ id: `s${i}`, input: `task ${i}` })).join(
    "\n",
  );
const toolLines = (path: string) =>
  existsSync(path) ? readFileSync(path, "utf8").split("\n").filter(Boolean) : [];
const totalRequests = () => Object.values(mock.counts()).reduce((a, b) => a + b, 0);

type JournalRow = {
  sample_id: string;
  epoch: number;
  attempt: number | null;
  step: number;
  kind: string;
  input: string;
  result: string;
  input_tokens: number | null;
  output_tokens: number | null;
};

interface ExportedRow {
  journal: { step: number; kind: string; name: string }[];
}

function journalRows(db: string): JournalRow[] {
  const conn = new Database(db, { readonly: true, fileMustExist: true });
  try {
    return conn
      .prepare("SELECT * FROM journal ORDER BY sample_id, epoch, attempt, step")
      .all() as JournalRow[];
  } finally {
    conn.close();
  }
}

function tokens(rows: readonly Record<string, unknown>[]): number {
  return rows.reduce(
    (sum, r) => sum + Number(r.input_tokens ?? 0) + Number(r.output_tokens ?? 0),
    0,
  );
}

async function until(check: () => boolean, what: string, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

function storeBytes(db: string): string[] {
  const files = [db, ...(existsSync(`${db}-wal`) ? [`${db}-wal`] : [])];
  return files.map((file) => readFileSync(file).toString("latin1"));
}

describe("the step journal with real processes", () => {
  it("a SIGKILLed agent run resumes mid-trajectory: each kill loses at most one call or step per sample in flight", async () => {
    // The uninterrupted run: what the interrupted one must end equal to.
    const plain = project({ "eval.mjs": EVAL, "data.jsonl": data(N) });
    const plainLog = join(plain.dir, "tools.log");
    const plainEnv = { MOCK_URL: mock.url, OPENAI_API_KEY: API_KEY, TOOL_LOG: plainLog };
    const clean = await runCli(["run", "eval.mjs"], { cwd: plain.dir, env: plainEnv });
    expect(clean.code, clean.stderr).toBe(0);
    expect(totalRequests()).toBe(N * ROUNDS);
    expect(toolLines(plainLog)).toHaveLength(N * ROUNDS);
    const expected = rawAttempts(plain.db);
    mock.reset();

    const p = project({ "eval.mjs": EVAL, "data.jsonl": data(N) });
    const log = join(p.dir, "tools.log");
    const env = { MOCK_URL: mock.url, OPENAI_API_KEY: API_KEY, TOOL_LOG: log };
    let runId = "";
    for (let kill = 0; kill < KILLS; kill++) {
      const cli =
        kill === 0
          ? startCli(["run", "eval.mjs"], { cwd: p.dir, env })
          : startCli(["resume", runId], { cwd: p.dir, env });
      runId = (await cli.waitFor(/^run (r_\w+)/m))[1]!;
      // Kill at a random point: after this process ran a random number of tool steps.
      const before = toolLines(log).length;
      const target = before + 10 + Math.floor(Math.random() * 50);
      await until(() => toolLines(log).length >= target, `${target} tool steps`);
      cli.child.kill("SIGKILL");
      expect((await cli.done).signal).toBe("SIGKILL");
    }
    expect(rawAttempts(p.db).length).toBeLessThan(N); // the kills interrupted the work
    const final = await runCli(["resume", runId], { cwd: p.dir, env });
    expect(final.code, final.stderr).toBe(0);

    // Each kill loses at most the one call or step in flight per sample.
    const extraRequests = totalRequests() - N * ROUNDS;
    const extraTools = toolLines(log).length - N * ROUNDS;
    expect(extraRequests).toBeGreaterThanOrEqual(0);
    expect(extraRequests).toBeLessThanOrEqual(KILLS * CONCURRENCY);
    expect(extraTools).toBeGreaterThanOrEqual(0);
    expect(extraTools).toBeLessThanOrEqual(KILLS * CONCURRENCY);

    // Every key scored once, with the uninterrupted run's outputs.
    const after = rawAttempts(p.db);
    expect(after).toHaveLength(N);
    expect(after.every((a) => a.status === "scored" && a.attempt === 1)).toBe(true);
    expect(after.map((a) => [a.sample_id, a.output])).toEqual(
      expected.map((a) => [a.sample_id, a.output]),
    );
    // The trajectory (the journal's chat calls) holds the uninterrupted run's tokens; an
    // attempt's own usage covers only the calls its execution made (replayed ones are reused).
    const rows = journalRows(p.db);
    expect(rows.every((r) => r.attempt === 1)).toBe(true);
    expect(rows).toHaveLength(N * ROUNDS * 2);
    expect(tokens(rows.filter((r) => r.kind === "chat"))).toBe(tokens(expected));
    expect(tokens(after)).toBeLessThanOrEqual(tokens(expected));
    // No API key in any journal row (nor anywhere in the store, WAL included).
    for (const bytes of storeBytes(p.db)) expect(bytes.includes(API_KEY)).toBe(false);
    expect(mock.requests.some((r) => r.headers.authorization === `Bearer ${API_KEY}`)).toBe(true);
  }, 180_000);

  it("a resumed sample that takes another path at step k replays the steps before k and runs the rest", async () => {
    mock.reset();
    const p = project({ "eval.mjs": EVAL, "data.jsonl": data(2) });
    const log = join(p.dir, "tools.log");
    const env = { MOCK_URL: mock.url, OPENAI_API_KEY: API_KEY, TOOL_LOG: log };
    // Rounds 0..3 run (8 steps per sample), then the agent hangs at round 4 and is killed.
    const cli = startCli(["run", "eval.mjs"], { cwd: p.dir, env: { ...env, BLOCK_AT: "4" } });
    const runId = (await cli.waitFor(/^run (r_\w+)/m))[1]!;
    await until(() => existsSync(p.db) && journalRows(p.db).length === 2 * 8, "16 journal rows");
    cli.child.kill("SIGKILL");
    await cli.done;

    // Resumed, the tool input of round 1 (step 3) differs: steps 0-2 replay, the rest run.
    const resumed = await runCli(["resume", runId], {
      cwd: p.dir,
      env: { ...env, DIVERGE_AT: "1" },
    });
    expect(resumed.code, resumed.stderr).toBe(0);
    // Per sample: 3 steps replayed (2 of them chat calls of 15 tokens each), then the divergence.
    expect(resumed.stdout).toMatch(/^journal +6 steps replayed · 2 diverged · 60 tokens, /m);
    const counts = mock.counts();
    for (const id of ["s0", "s1"]) {
      const task = id.replace("s", "task ");
      // Round 0's and round 1's chats were replayed: requested once, by the first process.
      expect(counts[`${task} round 0`]).toBe(1);
      expect(counts[`${task} round 1 ${id}:0`]).toBe(1);
      // After the divergence nothing is replayed: round 2's chat is asked again.
      expect(counts[`${task} round 2 ${id}:1`]).toBe(2);
      expect(counts[`${task} round ${ROUNDS - 1} ${id}:${ROUNDS - 2}`]).toBe(1);
      const lines = toolLines(log).filter((l) => l.startsWith(`${id} `));
      expect(lines).toEqual([
        `${id} 0 same`,
        `${id} 1 same`,
        `${id} 2 same`,
        `${id} 3 same`,
        // the resume: round 0's tool replayed, round 1's diverged
        `${id} 1 other`,
        ...Array.from({ length: ROUNDS - 2 }, (_, i) => `${id} ${i + 2} same`),
      ]);
    }
    // The attempt's trajectory is the resumed path: the old entries from step 3 on are gone.
    const rows = journalRows(p.db).filter((r) => r.sample_id === "s0");
    expect(rows.map((r) => r.step)).toEqual(Array.from({ length: ROUNDS * 2 }, (_, i) => i));
    expect(rows.every((r) => r.attempt === 1)).toBe(true);
    expect(JSON.parse(rows[3]!.input)).toMatchObject({ variant: "other" });

    // The export shows the journal as the attempt's trajectory, in both formats.
    const jsonl = await runCli(["export", runId, "--format", "jsonl"], { cwd: p.dir });
    expect(jsonl.code, jsonl.stderr).toBe(0);
    const [row] = jsonl.stdout
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as ExportedRow);
    expect(row!.journal.map((s) => [s.step, s.kind, s.name])).toEqual(
      Array.from({ length: ROUNDS * 2 }, (_, i) => [
        i,
        i % 2 ? "step" : "chat",
        i % 2 ? "tool" : "chat",
      ]),
    );
    expect(row!.journal[0]).toMatchObject({
      input: { model: "gpt-4o-mini", messages: [{ role: "user", content: "task 0 round 0" }] },
      result: { content: "task 0 round 0" },
      usage: { inputTokens: 10, outputTokens: 5 },
    });
    const file = join(p.dir, "rs.json");
    const rs = await runCli(["export", runId, "--format", "resultset", "-o", file], { cwd: p.dir });
    expect(rs.code, rs.stderr).toBe(0);
    const doc = JSON.parse(readFileSync(file, "utf8")) as {
      results: { metadata: { stet: { journal: unknown[] } } }[];
    };
    expect(doc.results[0]!.metadata.stet.journal).toEqual(row!.journal);
    const valid = await runCli(["validate", file], { cwd: p.dir });
    expect(valid.code, valid.stdout + valid.stderr).toBe(0);
    expect(jsonl.stdout + readFileSync(file, "utf8")).not.toContain(API_KEY);

    // --prune-journal: the finished run's trajectories go; its attempts stay.
    const pruned = await runCli(["resume", runId, "--prune-journal"], { cwd: p.dir, env });
    expect(pruned.code, pruned.stderr).toBe(0);
    expect(pruned.stdout).toMatch(/^journal: 32 entries of finished attempts deleted$/m);
    expect(journalRows(p.db)).toEqual([]);
    expect(rawAttempts(p.db)).toHaveLength(2);
  }, 60_000);

  it.skipIf(SKIP_BROWSER)(
    "the UI's sample view shows the journal as the sample's trajectory",
    async () => {
      mock.reset();
      const p = project({ "eval.mjs": EVAL, "data.jsonl": data(1) });
      const env = { MOCK_URL: mock.url, OPENAI_API_KEY: API_KEY, TOOL_LOG: join(p.dir, "t.log") };
      const run = await runCli(["run", "eval.mjs"], { cwd: p.dir, env });
      expect(run.code, run.stderr).toBe(0);
      const runId = /^run (r_\w+)/m.exec(run.stdout)![1]!;
      const server = await startServe(["--store", p.db]);
      try {
        const api = await (await server.fetch(`/api/runs/${runId}/samples/s0`)).text();
        expect(api).not.toContain(API_KEY);
        const { page, errors, close } = await openPage(`${server.url}/#/runs/${runId}/samples/s0`);
        try {
          const trajectory = page.locator("article.attempt details.trajectory");
          await trajectory.waitFor();
          await expect(trajectory.locator("summary").textContent()).resolves.toBe(
            `Trajectory · ${ROUNDS * 2} steps`,
          );
          const steps = trajectory.locator("li.step");
          await expect(steps.count()).resolves.toBe(ROUNDS * 2);
          await expect(steps.nth(0).textContent()).resolves.toContain("model call");
          await expect(steps.nth(0).locator("pre.step-result").textContent()).resolves.toBe(
            "task 0 round 0",
          );
          await expect(steps.nth(1).locator("pre.step-result").textContent()).resolves.toContain(
            "s0:0",
          );
          expect(errors).toEqual([]);
        } finally {
          await close();
        }
      } finally {
        server.proc.child.kill("SIGKILL");
      }
    },
    60_000,
  );
});
