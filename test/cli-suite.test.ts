import { existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli } from "./helpers/cli.js";
import { startMockOpenAI, type MockOpenAI } from "./helpers/mock-openai.js";
import { tempDir } from "./helpers/temp-store.js";

// `stet run suite.json`, `stet resume` of a suite run and `stet validate`, through the real
// CLI (bin/stet.js runs dist/: `npm run build` first).
let mock: MockOpenAI;
let dir: string;
let cleanup: () => void;
beforeAll(async () => {
  if (!existsSync(fileURLToPath(new URL("../dist/cli/bin.js", import.meta.url)))) {
    throw new Error("these tests run bin/stet.js from dist/: run `npm run build` first");
  }
  // The first request for "2+3?" fails with a non-retryable 400; every later one succeeds.
  mock = await startMockOpenAI({
    respond: ({ key, n }) => (key === "2+3?" && n === 1 ? { status: 400 } : undefined),
    reply: ({ key }) => ({ "2+2?": "4", "2+3?": "5" })[key] ?? "?",
  });
  ({ dir, cleanup } = tempDir());
});
afterAll(async () => {
  await mock.close();
  cleanup();
});

function suite(graders: string[]) {
  return {
    version: "1.0.0",
    id: "suite_cli",
    graders: [{ id: "gr_exact", type: "exact_match" }],
    test_cases: [
      { id: "tc_1", input: "2+2?", expected_output: "4", graders },
      { id: "tc_2", input: "2+3?", expected_output: "5", graders },
    ],
    config: { provider: { model: "suite-model", api_base: mock.url }, retry: { max_attempts: 1 } },
  };
}

function write(name: string, value: object): string {
  const path = join(dir, name);
  writeFileSync(path, JSON.stringify(value, null, 2));
  return path;
}

describe("stet run / resume of an EvalPort suite", () => {
  it("runs the suite, then resume executes only the errored test case", async () => {
    const file = write("suite.json", suite(["gr_exact"]));
    const store = join(dir, "stet.db");
    const run = await runCli(["run", file, "--model", "cli-model", "--store", store, "--json"]);
    expect(run.code, run.stderr).toBe(3);
    const report = JSON.parse(run.stdout) as { runId: string; counts: { scored: number } };
    expect(report.counts.scored).toBe(1);
    expect(mock.requests.every((r) => r.body.model === "cli-model")).toBe(true);

    const resumed = await runCli(["resume", report.runId, "--store", store, "--json"]);
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(JSON.parse(resumed.stdout)).toMatchObject({
      status: "completed",
      metrics: [{ scorer: "gr_exact", mean: 1 }],
    });
    expect(mock.counts()).toEqual({ "2+2?": 1, "2+3?": 2 });
    // Resume reuses the run's --model.
    expect(mock.requests.at(-1)!.body.model).toBe("cli-model");
  });

  it("refuses an invalid suite with the errors and exit 1, creating no run", async () => {
    const file = write("bad-suite.json", suite(["gr_nope"]));
    const store = join(dir, "bad.db");
    const run = await runCli(["run", file, "--store", store]);
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(
      /bad-suite\.json:\d+:\d+: \/test_cases\/0\/graders\/0: grader "gr_nope" is not defined in the suite's graders \[suite\.dangling_grader_ref\]/,
    );
    expect(existsSync(store)).toBe(false);
  });
});

describe("stet validate", () => {
  it("exits 0 for a valid suite", async () => {
    const result = await runCli(["validate", write("ok.json", suite(["gr_exact"]))]);
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/ok\.json: valid EvalPort suite/);
  });

  it("exits 1 and prints file:line:col: /path: message [code]", async () => {
    const path = join(dir, "results.jsonl");
    writeFileSync(
      path,
      '{"test_case_id":"a","passed":true,"grader_results":[]}\n{"test_case_id": oops}\n',
    );
    const result = await runCli(["validate", path]);
    expect(result.code).toBe(1);
    expect(result.stdout).toContain(`${path}:2:18: line 2 is not JSON`);
    expect(result.stdout).toMatch(/\[json\.syntax\]/);
  });

  it("--json prints the errors with paths and codes", async () => {
    const doc = {
      version: "1.0.0",
      suite_id: "s",
      run_id: "r",
      started_at: "2026-01-15T10:00:00Z",
      results: [
        {
          test_case_id: "a",
          passed: false,
          grader_results: [{ grader_id: "g", type: "exact_match", score: 1.5, passed: false }],
        },
      ],
    };
    const result = await runCli(["validate", write("rs.json", doc), "--json"]);
    expect(result.code).toBe(1);
    expect(JSON.parse(result.stdout)).toMatchObject({
      valid: false,
      kind: "resultset",
      errors: [{ path: "/results/0/grader_results/0/score", code: "schema.maximum" }],
    });
  });
});
