import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli, startCli } from "./helpers/cli.js";
import { perTest, rawAttempts } from "./helpers/eval-project.js";
import { startMockOpenAI, type MockOpenAI } from "./helpers/mock-openai.js";
import { until } from "./helpers/wait.js";

const N = 8;
const CONCURRENCY = 4;
const API_KEY = `sk-stet-chat-journal-${Math.random().toString(36).slice(2)}`;

/**
 * solvers.chat against a slow endpoint. With BLOCK_SCORER set the scorer notes the sample and
 * never returns: the solver's reply is journaled, the attempt never commits (the window a kill
 * lands in between a reply and its attempt's commit, held open so the test hits it every time).
 */
const EVAL = `
import { appendFileSync } from "node:fs";
import { defineEval, solvers } from "stet";
export default defineEval({
  name: "chat-journal",
  dataset: "./data.jsonl",
  concurrency: ${CONCURRENCY},
  solver: solvers.chat({ model: "openai:gpt-4o-mini", baseURL: process.env.MOCK_URL, system: "Be brief." }),
  scorers: [
    async function answered({ sample, output }) {
      if (process.env.BLOCK_SCORER) {
        appendFileSync(process.env.SCORED_LOG, sample.id + "\\n");
        // Never returns, and keeps the process alive (a bare pending promise would let it exit).
        await new Promise(() => setInterval(() => {}, 1000));
      }
      return typeof output === "string" && output.length > 0;
    },
  ],
});
`;

const { project } = perTest();
let mock: MockOpenAI;
beforeAll(async () => {
  mock = await startMockOpenAI({ latencyMs: 150 });
});
afterAll(() => mock.close());

const data = (n: number) =>
  Array.from({ length: n }, (_, i) => JSON.stringify({ id: `s${i}`, input: `task ${i}` })).join(
    "\n",
  );
const lines = (path: string) =>
  existsSync(path) ? readFileSync(path, "utf8").split("\n").filter(Boolean) : [];
const total = () => Object.values(mock.counts()).reduce((a, b) => a + b, 0);

function chatRows(
  db: string,
): { sample_id: string; input_tokens: number; output_tokens: number }[] {
  const conn = new Database(db, { readonly: true, fileMustExist: true });
  try {
    return conn.prepare("SELECT * FROM journal WHERE kind = 'chat' ORDER BY sample_id").all() as {
      sample_id: string;
      input_tokens: number;
      output_tokens: number;
    }[];
  } finally {
    conn.close();
  }
}

describe("solvers.chat goes through the step journal", () => {
  it("a SIGKILLed run's resume reuses the replies that were journaled but whose attempt never committed", async () => {
    const plain = project({ "eval.mjs": EVAL, "data.jsonl": data(N) });
    const clean = await runCli(["run", "eval.mjs"], {
      cwd: plain.dir,
      env: { MOCK_URL: mock.url, OPENAI_API_KEY: API_KEY },
    });
    expect(clean.code, clean.stderr).toBe(0);
    expect(total()).toBe(N);
    const expected = rawAttempts(plain.db);
    // An uninterrupted run journals one chat step per sample and records its usage as before.
    expect(chatRows(plain.db)).toHaveLength(N);
    expect(expected.every((a) => a.input_tokens === 10 && a.output_tokens === 5)).toBe(true);
    mock.reset();

    const p = project({ "eval.mjs": EVAL, "data.jsonl": data(N) });
    const scored = join(p.dir, "scored.log");
    const env = { MOCK_URL: mock.url, OPENAI_API_KEY: API_KEY, SCORED_LOG: scored };
    const cli = startCli(["run", "eval.mjs"], { cwd: p.dir, env: { ...env, BLOCK_SCORER: "1" } });
    const runId = (await cli.waitFor(/^run (r_\w+)/m))[1]!;
    // Every slot holds a sample whose scorer never returns and whose reply is journaled: the
    // chat solver does not wait for its entry (`last`), which commits at the writer's next turn.
    await until(() => lines(scored).length === CONCURRENCY, `${CONCURRENCY} blocked scorers`);
    await until(() => chatRows(p.db).length === CONCURRENCY, `${CONCURRENCY} journaled replies`);
    cli.child.kill("SIGKILL");
    expect((await cli.done).signal).toBe("SIGKILL");
    expect(existsSync(p.db) ? rawAttempts(p.db) : []).toEqual([]);
    const held = lines(scored);

    const resumed = await runCli(["resume", runId], { cwd: p.dir, env });
    expect(resumed.code, resumed.stderr).toBe(0);
    // The held samples' replies were replayed: one request per sample over both processes
    // (without the journal: N + CONCURRENCY), and their 15 tokens each are reused.
    expect(total()).toBe(N);
    for (const id of held) expect(mock.counts()[id.replace("s", "task ")]).toBe(1);
    expect(resumed.stdout).toMatch(
      new RegExp(
        `^journal +${CONCURRENCY} steps replayed · 0 diverged · ${CONCURRENCY * 15} tokens, `,
        "m",
      ),
    );

    // Outputs, transcripts and usage are the uninterrupted run's: an attempt's usage is its
    // whole trajectory; a replayed reply's part of it is marked reused (not this execution's spend).
    const after = rawAttempts(p.db);
    expect(after.map((a) => [a.sample_id, a.status, a.output, a.transcript])).toEqual(
      expected.map((a) => [a.sample_id, a.status, a.output, a.transcript]),
    );
    for (const a of after) {
      const replayed = held.includes(a.sample_id);
      expect([a.sample_id, a.input_tokens, a.output_tokens]).toEqual([a.sample_id, 10, 5]);
      const detail = a.usage_detail === null ? null : JSON.parse(String(a.usage_detail));
      if (replayed) expect(detail).toMatchObject({ reused: { inputTokens: 10, outputTokens: 5 } });
      else expect(detail).toBeNull();
    }
    const rows = chatRows(p.db);
    expect(rows).toHaveLength(N);
    expect(rows.every((r) => r.input_tokens === 10 && r.output_tokens === 5)).toBe(true);
    expect(readFileSync(p.db).toString("latin1")).not.toContain(API_KEY);
  }, 60_000);
});
