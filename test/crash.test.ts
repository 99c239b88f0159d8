import { existsSync, readFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli, startCli } from "./helpers/cli.js";
import { evalProject, questions, rawAttempts, type RawAttempt } from "./helpers/eval-project.js";
import { startMockOpenAI, type MockOpenAI } from "./helpers/mock-openai.js";
import { figuresReport } from "../src/engine/figures-report.js";
import { foldedReport } from "../src/engine/report.js";
import { openSqliteStore } from "../src/store/sqlite/index.js";

const N = 150;
const CONCURRENCY = 4;
const API_KEY = `sk-stet-test-${Math.random().toString(36).slice(2)}`;

const EVAL = `
import { defineEval, scorers, solvers } from "stet";
export default defineEval({
  name: "crash",
  dataset: "./data.jsonl",
  solver: solvers.chat({ model: "gpt-4o-mini", baseURL: process.env.MOCK_URL }),
  scorers: [scorers.includes()],
  concurrency: ${CONCURRENCY},
});
`;

let mock: MockOpenAI;
beforeAll(async () => {
  mock = await startMockOpenAI({
    // 150 keys at 200 ms, 4 at a time: a run lasts 7.5 s, so a kill aimed at "20 more commits"
    // lands mid-run even when a loaded machine delays this process's polling by seconds.
    latencyMs: 200,
    reply: ({ key }) => key.replace("question", "answer"),
  });
});
afterAll(() => mock.close());

const keyOf = (a: RawAttempt) => `${a.sample_id}#${a.epoch}`;

/** Polls the store until more than `count` attempts are committed; fails after `timeoutMs`. */
async function waitForCommitted(db: string, count: number, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const committed = existsSync(db) ? rawAttempts(db).length : 0;
    if (committed > count) return;
    if (Date.now() > deadline) {
      throw new Error(`timed out waiting for more than ${count} committed attempts (${committed})`);
    }
    await new Promise((r) => setTimeout(r, 10));
  }
}

/**
 * The report `stet show` reads from the figures the store kept commit by commit, beside the one
 * folded from every stored attempt: they must be equal whatever a kill cut short (guarantee 4).
 */
async function showReports(db: string, runId: string) {
  const store = openSqliteStore(db, { create: false });
  try {
    const run = (await store.runs.get(runId))!;
    const figures = await figuresReport(store, run, { invocation: false });
    return { figures, folded: await foldedReport(store, run) };
  } finally {
    await store.close();
  }
}

/** The store's files as text: the database must be there; its WAL is read when it exists. */
function storeBytes(db: string): string[] {
  const files = [db, ...(existsSync(`${db}-wal`) ? [`${db}-wal`] : [])];
  return files.map((file) => readFileSync(file).toString("latin1"));
}

describe("crash safety with real processes", () => {
  it("SIGKILLed at random points and resumed, every stored key keeps one request and its bytes", async () => {
    const project = evalProject({ "eval.mjs": EVAL, "data.jsonl": questions(N) });
    const env = { MOCK_URL: mock.url, OPENAI_API_KEY: API_KEY };
    try {
      const storedBeforeKills: RawAttempt[][] = [];
      const countsAtKills: Record<string, number>[] = [];
      let runId = "";
      for (let kill = 0; kill < 3; kill++) {
        const cli =
          kill === 0
            ? startCli(["run", "eval.mjs"], { cwd: project.dir, env })
            : startCli(["resume", runId], { cwd: project.dir, env });
        runId = (await cli.waitFor(/^run (r_\w+)/m))[1]!;
        // Wait until this process has committed some attempts of its own (a random number of
        // them, so the kill lands somewhere random in the middle of the work), then kill it.
        const before = kill === 0 ? 0 : storedBeforeKills.at(-1)!.length;
        await waitForCommitted(project.db, before + Math.floor(Math.random() * 20));
        cli.child.kill("SIGKILL");
        const result = await cli.done;
        expect(result.signal).toBe("SIGKILL");
        const stored = rawAttempts(project.db);
        expect(stored.length).toBeGreaterThan(before);
        storedBeforeKills.push(stored);
        const afterKill = await showReports(project.db, runId);
        expect(afterKill.figures).toBeDefined();
        expect(afterKill.figures).toEqual(afterKill.folded);
        // The key never reaches the store, WAL included (a killed process leaves its WAL).
        for (const bytes of storeBytes(project.db)) expect(bytes.includes(API_KEY)).toBe(false);
        countsAtKills.push({ ...mock.counts() });
      }
      const requestsBeforeFinal = Object.values(mock.counts()).reduce((a, b) => a + b, 0);
      const last = storedBeforeKills.at(-1)!;
      expect(last.length).toBeLessThan(N); // the kills really interrupted the work

      const final = await runCli(["resume", runId], { cwd: project.dir, env });
      expect(final.code, final.stderr).toBe(0);
      expect(final.stdout).toMatch(/plan: \d+ preserved/);

      const complete = await showReports(project.db, runId);
      expect(complete.figures).toEqual(complete.folded);
      expect(complete.figures?.counts).toMatchObject({ scored: N, remaining: 0 });

      const after = rawAttempts(project.db);
      const afterByKey = new Map(after.map((a) => [keyOf(a), a]));
      for (const before of storedBeforeKills) {
        for (const row of before) {
          // Byte-identical: every column of the stored row, unchanged by later resumes.
          expect(afterByKey.get(keyOf(row))).toEqual(row);
        }
      }
      // Every key exactly once, each scored; one request for every key stored before a kill.
      expect(after).toHaveLength(N);
      expect(new Set(after.map(keyOf)).size).toBe(N);
      expect(after.every((a) => a.status === "scored")).toBe(true);
      // A key stored before a kill is never requested again; those stored before the first kill
      // were requested exactly once.
      const counts = mock.counts();
      const question = (row: RawAttempt) => `question ${Number(row.sample_id.slice(1))}`;
      storedBeforeKills.forEach((rows, k) => {
        for (const row of rows)
          expect(counts[question(row)]).toBe(countsAtKills[k]![question(row)]);
      });
      for (const row of storedBeforeKills[0]!) expect(counts[question(row)]).toBe(1);
      // A kill loses at most the attempts in flight: re-executions per kill ≤ concurrency.
      const total = Object.values(counts).reduce((a, b) => a + b, 0);
      expect(total - N).toBeLessThanOrEqual(3 * CONCURRENCY);
      expect(total).toBeGreaterThanOrEqual(requestsBeforeFinal);

      const exported = await runCli(["export", runId, "--format", "jsonl"], { cwd: project.dir });
      const lines = exported.stdout
        .trim()
        .split("\n")
        .map((l) => JSON.parse(l) as { sampleId: string });
      expect(lines.map((l) => l.sampleId)).toEqual(after.map((a) => a.sample_id));

      // The key reached the model server but never the store.
      expect(mock.requests.some((r) => r.headers.authorization === `Bearer ${API_KEY}`)).toBe(true);
      for (const bytes of storeBytes(project.db)) expect(bytes.includes(API_KEY)).toBe(false);
    } finally {
      project.cleanup();
    }
  }, 180_000);
});
