import { parse } from "csv-parse/sync";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { parse as parseJunit, type Property, type TestCase, type TestSuites } from "junit2json";
import { afterEach, describe, expect, it } from "vitest";
import { createApp } from "../src/server/create-app.js";
import { openSqliteStore } from "../src/store/sqlite/index.js";
import { openPage, SKIP_BROWSER } from "./helpers/browser.js";
import { runCli, startCli } from "./helpers/cli.js";
import { evalProject, questions, rawAttempts, type RawAttempt } from "./helpers/eval-project.js";
import { startMockOpenAI, type MockAction, type MockOpenAI } from "./helpers/mock-openai.js";
import { startServe } from "./helpers/serve.js";

/**
 * Issue 27, item 6: retries are counted per attempt and per run and shown. Through the real CLI
 * against the local OpenAI-format mock, which fails known requests (500, 429, a dropped
 * connection) before it answers: every stored attempt's `retries` is exactly the number of extra
 * requests the mock received for it, and `show`, the end-of-run summary, the exports, the API
 * and the UI say so.
 */

const N = 12;
/** Fails its first 3 requests: with maxRetries 2 its first attempt errors after 2 retries. */
const DOOMED = "question 4";

const EVAL = `
import { defineEval, scorers, solvers } from "stet";
export default defineEval({
  name: "retries",
  dataset: "./data.jsonl",
  solver: solvers.chat({
    model: "gpt-4o-mini",
    baseURL: process.env.MOCK_URL,
    maxRetries: 2,
    backoff: { initialMs: 1, maxMs: 2 },
  }),
  scorers: [scorers.includes()],
  concurrency: 2,
});
`;

/** How many of a key's first requests fail: 0, 1 or 2 by its number, 3 for the doomed one. */
function failuresOf(key: string): number {
  if (key === DOOMED) return 3;
  return Number(key.replace("question ", "")) % 3;
}

/** The n-th request of a key: a failure while it has failures left (500, 429, a drop), else the reply. */
function respond({ key, n }: { key: string; n: number }): MockAction | undefined {
  if (n > failuresOf(key)) return { reply: key.replace("question", "answer") };
  if (key === "question 8" && n === 1) return { drop: true };
  // The doomed key fails with 500s only: a 429 while other keys succeed waits for the rate limit
  // without spending a retry (docs/rate-limits.md), so it would not be doomed.
  if (key === DOOMED) return { status: 500 };
  return n % 2 === 1 ? { status: 500 } : { status: 429 };
}

const cleanups: (() => Promise<unknown> | unknown)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

async function mockServer(options: Parameters<typeof startMockOpenAI>[0]): Promise<MockOpenAI> {
  const mock = await startMockOpenAI(options);
  cleanups.push(() => mock.close());
  return mock;
}

function project(n: number) {
  const p = evalProject({ "eval.mjs": EVAL, "data.jsonl": questions(n) });
  cleanups.push(p.cleanup);
  return p;
}

const runIdOf = (stdout: string) => stdout.match(/^run (r_\w+)/m)?.[1] ?? "";
const questionOf = (sampleId: string) => `question ${Number(sampleId.slice(1))}`;
const sum = (values: readonly number[]) => values.reduce((a, b) => a + b, 0);
const storedRetries = (rows: readonly RawAttempt[]) => rows.map((r) => r.retries as number);

describe("retries counted per attempt and per run, and shown", () => {
  it("each stored attempt's retries are the mock's extra requests; show, the summary, the exports, the ResultSet and the API say so", async () => {
    const mock = await mockServer({ respond });
    const p = project(N);
    const env = { MOCK_URL: mock.url, OPENAI_API_KEY: "sk-retries-test" };

    const run = await runCli(["run", "eval.mjs"], { cwd: p.dir, env });
    expect(run.code, run.stderr).toBe(3); // the doomed key errored
    const runId = runIdOf(run.stdout);
    const first = rawAttempts(p.db);
    expect(first).toHaveLength(N);
    // One attempt per key so far: its retries are every request for the key but the first.
    const counts = mock.counts();
    for (const row of first) {
      expect(row.retries, row.sample_id).toBe(counts[questionOf(row.sample_id)]! - 1);
    }
    const doomed = first.find((r) => questionOf(r.sample_id) === DOOMED)!;
    expect(doomed).toMatchObject({ status: "error", retries: 2 });
    const total = sum(storedRetries(first));
    expect(total).toBe(sum(Object.keys(counts).map((k) => Math.min(failuresOf(k), 2))));
    expect(run.stdout).toContain(
      `retries  ${total} requests re-sent (all attempts) · 0 keys needed more than one attempt`,
    );

    // The resume executes the errored key again; the mock answers its 4th request at once.
    const stepSummary = join(p.dir, "step-summary.md");
    const resumed = await runCli(["resume", runId], {
      cwd: p.dir,
      env: { ...env, GITHUB_STEP_SUMMARY: stepSummary },
    });
    expect(resumed.code, resumed.stderr).toBe(0);
    const rows = rawAttempts(p.db);
    expect(rows).toHaveLength(N + 1);
    // Every request the mock saw beyond each stored attempt's first one is a stored retry.
    const requests = sum(Object.values(mock.counts()));
    expect(sum(storedRetries(rows))).toBe(requests - rows.length);
    expect(
      rows.filter((r) => questionOf(r.sample_id) === DOOMED).map((r) => [r.attempt, r.retries]),
    ).toEqual([
      [1, 2],
      [2, 0],
    ]);
    const line = `retries  ${total} requests re-sent (all attempts) · 1 key needed more than one attempt`;
    expect(resumed.stdout).toContain(line);

    const show = await runCli(["show", runId], { cwd: p.dir });
    expect(show.code, show.stderr).toBe(0);
    expect(show.stdout).toContain(line);
    const shownJson = await runCli(["show", runId, "--json"], { cwd: p.dir });
    expect(JSON.parse(shownJson.stdout)).toMatchObject({
      retries: { total, keysRetried: 1, unrecorded: 0 },
    });
    const sample = await runCli(["show", runId, "--sample", doomed.sample_id], { cwd: p.dir });
    expect(sample.stdout).toMatch(/epoch 1 attempt 1 · \S+ · error \(provider\): .* · retries 2 ·/);
    expect(sample.stdout).toMatch(/epoch 1 attempt 2 \(outcome\) · \S+ · includes=1 · retries 0 ·/);

    // Exports: each key's outcome with its own count.
    const outcome = new Map(
      rows.filter((r) => r.status === "scored").map((r) => [r.sample_id, r.retries as number]),
    );
    expect(outcome.size).toBe(N);
    const jsonl = await runCli(["export", runId, "--format", "jsonl"], { cwd: p.dir });
    const lines = jsonl.stdout
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as { sampleId: string; retries: number });
    expect(new Map(lines.map((l) => [l.sampleId, l.retries]))).toEqual(outcome);
    const csv = await runCli(["export", runId, "--format", "csv"], { cwd: p.dir });
    const records = parse(csv.stdout, { columns: true }) as Record<string, string>[];
    expect(new Map(records.map((r) => [r.sampleId, Number(r.retries)]))).toEqual(outcome);
    const resultSet = await runCli(["export", runId, "--format", "resultset"], { cwd: p.dir });
    const doc = JSON.parse(resultSet.stdout) as {
      results: { test_case_id: string; metadata: { stet: { retries: number } } }[];
    };
    expect(new Map(doc.results.map((r) => [r.test_case_id, r.metadata.stet.retries]))).toEqual(
      outcome,
    );

    // The reports: the run's line in the Markdown (the resume's step summary too) and the HTML.
    const words = line.slice("retries  ".length);
    expect(readFileSync(stepSummary, "utf8")).toContain(`\n\n**Retries:** ${words}\n`);
    const markdown = await runCli(["export", runId, "--format", "markdown"], { cwd: p.dir });
    expect(markdown.stdout).toContain(`\n\n**Retries:** ${words}\n`);
    const html = await runCli(["export", runId, "--format", "html"], { cwd: p.dir });
    expect(html.stdout).toContain(`\n<p class="meta">retries: ${words}</p></header>`);
    // JUnit: the run's figures on the suite; each outcome's count when it re-sent any, and the
    // doomed key's attempt number (its outcome is its second attempt).
    const junit = await runCli(["export", runId, "--format", "junit"], { cwd: p.dir });
    const suite = ((await parseJunit(junit.stdout)) as TestSuites).testsuite![0]!;
    expect(suite.properties).toEqual(
      expect.arrayContaining([
        { name: "stet.retries", value: total },
        { name: "stet.keysRetried", value: 1 },
      ]),
    );
    const caseProperties = new Map(
      // junit2json reads a test case's properties too, though its type does not say so.
      (suite.testcase ?? []).map((c: TestCase & { properties?: Property[] }) => [
        c.name,
        (c.properties ?? []).map((prop) => `${prop.name}=${prop.value}`),
      ]),
    );
    const expectedProperties = new Map(
      [...outcome].map(([id, retries]) => [
        `${id}#1`,
        [
          ...(id === doomed.sample_id ? ["stet.attempt=2"] : []),
          ...(retries > 0 ? [`stet.retries=${retries}`] : []),
        ],
      ]),
    );
    expect(caseProperties).toEqual(expectedProperties);
    expect([...expectedProperties.values()].filter((props) => props.length > 0).length).toBe(8);

    // The API: the run detail's totals, and each attempt's count on the sample.
    const store = openSqliteStore(p.db);
    cleanups.push(() => store.close());
    const app = createApp({ store });
    const detail = (await (await app.request(`/api/runs/${runId}`)).json()) as {
      retries: unknown;
    };
    expect(detail.retries).toEqual({ total, keysRetried: 1, unrecorded: 0 });
    const one = (await (
      await app.request(`/api/runs/${runId}/samples/${doomed.sample_id}`)
    ).json()) as {
      attempts: { attempt: number; retries: number }[];
    };
    expect(one.attempts.map((a) => [a.attempt, a.retries])).toEqual([
      [1, 2],
      [2, 0],
    ]);
    const listed = (await (await app.request(`/api/runs/${runId}/samples?limit=100`)).json()) as {
      samples: { sampleId: string; outcome: { retries: number } }[];
    };
    expect(new Map(listed.samples.map((s) => [s.sampleId, s.outcome.retries]))).toEqual(outcome);
  }, 120_000);

  it("a resume of a killed run shows the run's total over both invocations", async () => {
    // Every key's first request fails; replies are slow enough that the kill lands mid-run.
    const mock = await mockServer({
      sequence: [{ status: 503 }],
      latencyMs: 40,
      reply: ({ key }) => key.replace("question", "answer"),
    });
    const n = 30;
    const p = project(n);
    const env = { MOCK_URL: mock.url, OPENAI_API_KEY: "sk-retries-test" };
    const cli = startCli(["run", "eval.mjs"], { cwd: p.dir, env });
    const runId = (await cli.waitFor(/^run (r_\w+)/m))[1]!;
    while (rawAttemptsOrNone(p.db).length < 4) await new Promise((r) => setTimeout(r, 10));
    cli.child.kill("SIGKILL");
    expect((await cli.done).signal).toBe("SIGKILL");
    const beforeKill = rawAttempts(p.db);
    const countsAtKill = mock.counts();
    expect(beforeKill.length).toBeLessThan(n);
    // Each stored key failed once and was answered on its retry.
    for (const row of beforeKill) {
      expect(row.retries).toBe(1);
      expect(countsAtKill[questionOf(row.sample_id)]).toBe(2);
    }

    const resumed = await runCli(["resume", runId], { cwd: p.dir, env });
    expect(resumed.code, resumed.stderr).toBe(0);
    const rows = rawAttempts(p.db);
    expect(rows).toHaveLength(n);
    const counts = mock.counts();
    // Keys first requested by the resume: one retry each, exactly the mock's extra request.
    for (const row of rows) {
      const key = questionOf(row.sample_id);
      if (countsAtKill[key] === undefined) expect(row.retries).toBe(counts[key]! - 1);
    }
    const total = sum(storedRetries(rows));
    const fromFirst = sum(storedRetries(beforeKill));
    // The run's total, not the resume's own: the killed invocation's attempts count too.
    expect(fromFirst).toBe(beforeKill.length);
    expect(resumed.stdout).toContain(`retries  ${total} requests re-sent (all attempts)`);
    const show = await runCli(["show", runId], { cwd: p.dir });
    expect(show.stdout).toContain(`retries  ${total} requests re-sent (all attempts)`);
  }, 120_000);

  it.skipIf(SKIP_BROWSER)(
    "the UI shows the run's total on its page and each attempt's count on the sample's",
    async () => {
      const mock = await mockServer({ respond });
      const p = project(6);
      const env = { MOCK_URL: mock.url, OPENAI_API_KEY: "sk-retries-test" };
      const run = await runCli(["run", "eval.mjs"], { cwd: p.dir, env });
      const runId = runIdOf(run.stdout);
      expect(runId).not.toBe("");
      const rows = rawAttempts(p.db);
      const total = sum(storedRetries(rows));
      const server = await startServe(["--store", p.db]);
      cleanups.push(() => server.proc.child.kill("SIGKILL"));

      const { page, errors, close } = await openPage(`${server.url}/#/runs/${runId}`);
      cleanups.push(close);
      await expect
        .poll(() => page.locator("p.retries").textContent(), { timeout: 20_000 })
        .toBe(`Retries ${total} requests re-sent · 0 keys needed more than one attempt`);

      const q2 = rows.find((r) => r.sample_id === "q002")!;
      expect(q2.retries).toBe(2);
      await page.goto(`${server.url}/#/runs/${runId}/samples/q002`);
      await expect
        .poll(() => page.locator('article.attempt[data-attempt="1"] p.meta').textContent(), {
          timeout: 20_000,
        })
        .toContain(" · 2 retries");
      await close();
      expect(errors).toEqual([]);
    },
    120_000,
  );
});

function rawAttemptsOrNone(db: string): RawAttempt[] {
  try {
    return rawAttempts(db);
  } catch {
    return [];
  }
}
