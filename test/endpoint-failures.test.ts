import { closedPort } from "./helpers/closed-port.js";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { runCli } from "./helpers/cli.js";
import { evalProject, questions, rawAttempts, rawRun } from "./helpers/eval-project.js";
import { startMockOpenAI, type MockOpenAI } from "./helpers/mock-openai.js";

/**
 * Issue 11: a broken endpoint fails fast and says why. Through the real CLI: nothing listening,
 * and a server that answers 401 to everything, stop the run after its first samples, none of
 * them retried (not after every sample has retried), say what is wrong and where, exit 1, and
 * leave the run resumable. Fast is counted in requests and attempts, not timed: a loaded
 * machine's seconds say nothing.
 */
const N = 200;
const CONCURRENCY = 4;
const API_KEY = "sk-stet-test-wrong-key";

// The chat solver with its default retries and backoff: what a user gets.
const EVAL = `
import { defineEval, scorers, solvers } from "stet";
export default defineEval({
  name: "endpoint",
  dataset: "./data.jsonl",
  solver: solvers.chat({ model: "gpt-4o-mini", baseURL: process.env.MOCK_URL }),
  scorers: [scorers.includes()],
  concurrency: ${CONCURRENCY},
});
`;

const INCORRECT_KEY = {
  error: {
    message:
      "Incorrect API key provided: sk-stet-***-key. You can find your API key at https://platform.openai.com/account/api-keys.",
    type: "invalid_request_error",
    param: null,
    code: "invalid_api_key",
  },
};

let unauthorized: MockOpenAI;
let good: MockOpenAI;
beforeAll(async () => {
  unauthorized = await startMockOpenAI({ respond: () => ({ status: 401, body: INCORRECT_KEY }) });
  good = await startMockOpenAI({ reply: ({ key }) => key.replace("question", "answer") });
});
afterAll(async () => {
  await unauthorized.close();
  await good.close();
});
afterEach(() => {
  unauthorized.reset();
  good.reset();
});

const cleanups: (() => void)[] = [];
afterEach(() => {
  while (cleanups.length) cleanups.pop()!();
});
function project() {
  const p = evalProject({ "eval.mjs": EVAL, "data.jsonl": questions(N) });
  cleanups.push(p.cleanup);
  return p;
}

const runIdOf = (stdout: string) => stdout.match(/^run (r_\w+)/m)?.[1] ?? "";
const total = (counts: Record<string, number>) => Object.values(counts).reduce((a, b) => a + b, 0);

describe("a broken endpoint fails fast and says why", () => {
  it("nothing listening: stops after its first samples, says connection refused with the URL, exits 1", async () => {
    const p = project();
    const url = `http://127.0.0.1:${await closedPort()}/v1`;
    const result = await runCli(["run", "eval.mjs"], {
      cwd: p.dir,
      env: { MOCK_URL: url, OPENAI_API_KEY: API_KEY },
    });
    expect(result.code, result.stderr).toBe(1);
    expect(result.stderr).toContain("connection refused");
    expect(result.stderr).toContain(`${url}/chat/completions`);
    const runId = runIdOf(result.stdout);
    expect(result.stderr).toContain(`stet resume ${runId}`);
    expect(result.stderr).not.toContain("unexpected error");

    const stored = rawAttempts(p.db);
    expect(stored.length).toBeGreaterThanOrEqual(3);
    expect(stored.length).toBeLessThanOrEqual(3 + CONCURRENCY);
    // Refused at once, not retried with backoff: no error says "after <n> attempts".
    expect(stored.map((a) => String(a.error)).filter((e) => / after \d+ attempts/.test(e))).toEqual(
      [],
    );
    const run = rawRun(p.db, runId);
    expect(run).toMatchObject({ status: "interrupted" });
    expect(String(run?.note)).toContain("connection refused");
  }, 60_000);

  it("the resume command after a stop names the store the run used", async () => {
    const p = project();
    const url = `http://127.0.0.1:${await closedPort()}/v1`;
    const result = await runCli(["run", "eval.mjs", "--store", "elsewhere/evals.db"], {
      cwd: p.dir,
      env: { MOCK_URL: url, OPENAI_API_KEY: API_KEY },
    });
    expect(result.code, result.stderr).toBe(1);
    const runId = runIdOf(result.stdout);
    expect(result.stderr).toContain(
      `Once the endpoint is fixed, resume with: stet resume ${runId} --store elsewhere/evals.db\n`,
    );
  }, 60_000);

  it("401 to everything: stops after its first samples with the status and message, then resumes once fixed", async () => {
    const p = project();
    const result = await runCli(["run", "eval.mjs"], {
      cwd: p.dir,
      env: { MOCK_URL: unauthorized.url, OPENAI_API_KEY: API_KEY },
    });
    expect(result.code, result.stderr).toBe(1);
    expect(result.stderr).toContain("HTTP 401: Incorrect API key provided");
    expect(result.stderr).toContain(`${unauthorized.url}/chat/completions`);
    expect(result.stderr).not.toContain(API_KEY);
    const runId = runIdOf(result.stdout);
    expect(result.stderr).toContain(`stet resume ${runId}`);

    // Far fewer requests than samples: the 3 that decided it and those in flight then.
    const requests = unauthorized.requests.length;
    expect(requests).toBeGreaterThanOrEqual(3);
    expect(requests).toBeLessThanOrEqual(3 + CONCURRENCY);
    const failed = rawAttempts(p.db);
    expect(failed).toHaveLength(requests); // each request one attempt, none retried
    expect(failed.every((a) => a.status === "error")).toBe(true);
    expect(rawRun(p.db, runId)).toMatchObject({ status: "interrupted" });

    // The endpoint fixed (the eval reads MOCK_URL), the resume executes every key.
    const resumed = await runCli(["resume", runId], {
      cwd: p.dir,
      env: { MOCK_URL: good.url, OPENAI_API_KEY: API_KEY },
    });
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(Object.keys(good.counts())).toHaveLength(N);
    expect(total(good.counts())).toBe(N);
    const after = rawAttempts(p.db);
    const scored = new Set(after.filter((a) => a.status === "scored").map((a) => a.sample_id));
    expect(scored.size).toBe(N);
    // The errored attempts of the first invocation stay beside the scored ones.
    expect(after).toHaveLength(N + failed.length);
    expect(rawRun(p.db, runId)).toMatchObject({ status: "completed" });
  }, 60_000);

  it("a 404 for some samples' content is not a broken endpoint: every key runs, exit 3", async () => {
    const p = project();
    const mock = await startMockOpenAI({
      respond: ({ key }) =>
        /^question [0-4]$/.test(key)
          ? { status: 404, body: { error: { message: `no such document for ${key}` } } }
          : { reply: key.replace("question", "answer") },
    });
    try {
      const result = await runCli(["run", "eval.mjs"], {
        cwd: p.dir,
        env: { MOCK_URL: mock.url, OPENAI_API_KEY: API_KEY },
      });
      expect(result.code, result.stderr).toBe(3);
      expect(result.stderr).not.toContain("stopped early");
      expect(total(mock.counts())).toBe(N);
      expect(rawAttempts(p.db)).toHaveLength(N);
    } finally {
      await mock.close();
    }
  }, 60_000);
});
