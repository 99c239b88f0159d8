import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createApp } from "../src/server/create-app.js";
import { openSqliteStore } from "../src/store/sqlite/index.js";
import { runCli } from "./helpers/cli.js";
import { perTest, questions } from "./helpers/eval-project.js";
import { startMockOpenAI, type MockOpenAI } from "./helpers/mock-openai.js";

// What a new user sees of a gpt-4o-mini eval whose model is named by its solver, not `--model`:
// the model everywhere the run is shown, and its sub-cent cost with its significant digits.
const { project } = perTest();

/** solvers.chat names the model; the run is started without --model. */
const EVAL = `import { defineEval, scorers, solvers } from "stet";
export default defineEval({
  name: "mini",
  dataset: "./data.jsonl",
  solver: solvers.chat({ model: "gpt-4o-mini" }),
  scorers: [scorers.exact()],
});
`;

let mock: MockOpenAI;
beforeAll(async () => {
  // 10 input and 5 output tokens at gpt-4o-mini's $0.15 / $0.60 per 1M: $0.0000045 a sample.
  mock = await startMockOpenAI({ usage: { prompt_tokens: 10, completion_tokens: 5 } });
});
afterAll(() => mock.close());

describe("a small eval as a new user sees it", () => {
  it("shows the solver's model and a sub-cent cost in show, list, the reports and the API", async () => {
    const p = project({ "eval.mjs": EVAL, "data.jsonl": questions(3) });
    const env = { OPENAI_BASE_URL: mock.url, OPENAI_API_KEY: "sk-test" };
    const run = await runCli(["run", "eval.mjs", "--json"], { cwd: p.dir, env });
    expect(run.code, run.stderr).toBe(0);
    const runId = (JSON.parse(run.stdout) as { runId: string }).runId;
    const total = "$0.0000135"; // 3 × $0.0000045, not "$0.0000"

    const show = await runCli(["show", runId], { cwd: p.dir });
    expect(show.stdout).toContain("model gpt-4o-mini");
    expect(show.stdout).toContain(`${total} spent on this run`);

    const list = await runCli(["list", "--json"], { cwd: p.dir });
    expect(JSON.parse(list.stdout)).toMatchObject([{ id: runId, model: "gpt-4o-mini" }]);

    const html = join(p.dir, "report.html");
    expect(
      (await runCli(["export", runId, "--format", "html", "-o", html], { cwd: p.dir })).code,
    ).toBe(0);
    const page = readFileSync(html, "utf8");
    expect(page).toContain("model gpt-4o-mini");
    expect(page).toContain(`spend: ${total} spent`);
    const noRetries = "0 requests re-sent (all attempts) · 0 keys needed more than one attempt";
    expect(page).toContain(`<p class="meta">retries: ${noRetries}</p>`);

    const md = await runCli(["export", runId, "--format", "markdown"], { cwd: p.dir });
    expect(md.stdout).toContain("model gpt\\-4o\\-mini"); // Markdown-escaped
    expect(md.stdout).toContain(total);
    expect(md.stdout).toContain(`\n\n**Retries:** ${noRetries}\n`);

    const junit = await runCli(["export", runId, "--format", "junit"], { cwd: p.dir });
    expect(junit.stdout).toContain('<property name="stet.model" value="gpt-4o-mini"/>');

    const store = openSqliteStore(p.db, { create: false });
    try {
      const res = await createApp({ store }).request("/api/runs");
      expect(await res.json()).toMatchObject({ runs: [{ id: runId, model: "gpt-4o-mini" }] });
    } finally {
      await store.close();
    }
  });

  it("show --sample prints the sample's input and target; list has the first scorer's mean", async () => {
    const p = project({
      "eval.mjs": EVAL,
      "data.jsonl": [
        JSON.stringify({ id: "multi", input: "line one\nline two", target: "line one\nline two" }),
        JSON.stringify({ id: "wrong", input: "a question", target: "an answer" }),
      ].join("\n"),
    });
    const env = { OPENAI_BASE_URL: mock.url, OPENAI_API_KEY: "sk-test" };
    const run = await runCli(["run", "eval.mjs", "--json"], { cwd: p.dir, env });
    const runId = (JSON.parse(run.stdout) as { runId: string }).runId;

    const sample = await runCli(["show", runId, "--sample", "wrong"], { cwd: p.dir });
    expect(sample.code, sample.stderr).toBe(0);
    expect(sample.stdout).toContain("\ninput   a question\ntarget  an answer\n");
    const multi = await runCli(["show", runId, "--sample", "multi"], { cwd: p.dir });
    expect(multi.stdout).toContain("\ninput   line one\n        line two\n");

    // The mock echoes the input: "multi" is right, "wrong" is not.
    const list = await runCli(["list"], { cwd: p.dir });
    expect(list.stdout).toMatch(/^id\s+eval\s+status\s+done\s+errored\s+score\s+created$/m);
    expect(list.stdout).toMatch(
      new RegExp(`^${runId}\\s+mini\\s+completed\\s+2/2\\s+0\\s+exact 0\\.5000\\s`, "m"),
    );
    const json = await runCli(["list", "--json"], { cwd: p.dir });
    expect(JSON.parse(json.stdout)).toMatchObject([
      { id: runId, score: { scorer: "exact", mean: 0.5 } },
    ]);
  });

  it("says what a run spent, never its own spend as reused: after a run, a resume and a no-op resume", async () => {
    // q001's first request is refused (400: not retried), so the run ends with one error.
    const refusing = await startMockOpenAI({
      usage: { prompt_tokens: 10, completion_tokens: 5 },
      respond: ({ key, n }) => (key === "question 1" && n === 1 ? { status: 400 } : undefined),
    });
    try {
      const p = project({ "eval.mjs": EVAL, "data.jsonl": questions(3) });
      const env = { OPENAI_BASE_URL: refusing.url, OPENAI_API_KEY: "sk-test" };
      const run = await runCli(["run", "eval.mjs"], { cwd: p.dir, env });
      expect(run.code).toBe(3);
      const runId = /^run (r_\w+)/m.exec(run.stdout)![1]!;
      // The first run bought two outcomes ($0.0000045 each) and reused nothing.
      expect(run.stdout).toContain(
        "cost     $0.000009 spent now · $0.000009 total on this run · $0.00 reused",
      );

      // Seen from `stet show` no invocation ran: the run's spend is its spend, not "reused".
      const shown = await runCli(["show", runId], { cwd: p.dir });
      expect(shown.stdout).toContain("cost     $0.000009 spent on this run (every invocation)\n");
      expect(shown.stdout).not.toContain("reused");
      const json = JSON.parse((await runCli(["show", runId, "--json"], { cwd: p.dir })).stdout) as {
        usage: { reused: { attempts: number; costUsd: number } };
      };
      expect(json.usage.reused).toMatchObject({ attempts: 0, costUsd: 0 });

      // The resume re-buys only q001: the two outcomes it kept are what it reused.
      const resumed = await runCli(["resume", runId], { cwd: p.dir, env });
      expect(resumed.code, resumed.stderr).toBe(0);
      expect(resumed.stdout).toContain(
        "cost     $0.0000045 spent now · $0.0000135 total on this run · $0.000009 reused (not re-bought)",
      );
      // A resume with nothing to do reused nothing either.
      const noop = await runCli(["resume", runId], { cwd: p.dir, env });
      expect(noop.stdout).toContain(
        "cost     $0.00 spent now · $0.0000135 total on this run · $0.00 reused",
      );

      const md = await runCli(["export", runId, "--format", "markdown"], { cwd: p.dir });
      expect(md.stdout).toContain("**Spend:** $0.0000135 in total\n");
      const html = join(p.dir, "r.html");
      await runCli(["export", runId, "--format", "html", "-o", html], { cwd: p.dir });
      expect(readFileSync(html, "utf8")).toContain("spend: $0.0000135 spent · 30 input");
      const store = openSqliteStore(p.db, { create: false });
      try {
        const detail = (await (
          await createApp({ store }).request(`/api/runs/${runId}`)
        ).json()) as {
          cost: { spent: { costUsd: number }; reused: { attempts: number } };
        };
        expect(detail.cost.reused.attempts).toBe(0);
        expect(detail.cost.spent.costUsd).toBeCloseTo(0.0000135, 12);
      } finally {
        await store.close();
      }
    } finally {
      await refusing.close();
    }
  });
});
