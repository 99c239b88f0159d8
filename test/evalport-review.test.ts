import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli } from "./helpers/cli.js";
import { startMockOpenAI, type MockOpenAI } from "./helpers/mock-openai.js";
import { tempDir } from "./helpers/temp-store.js";

// An EvalPort suite's `human` grader is pending until reviewed; `stet review --import` fills it
// in the ResultSet export, with the reviewer, and the JSONL and CSV exports carry the reviews.
let mock: MockOpenAI;
let dir: string;
let cleanup: () => void;
beforeAll(async () => {
  mock = await startMockOpenAI({ reply: ({ key }) => ({ "2+2?": "4", "2+3?": "6" })[key] ?? "?" });
  ({ dir, cleanup } = tempDir());
});
afterAll(async () => {
  await mock.close();
  cleanup();
});

const SUITE = () => ({
  version: "1.0.0",
  id: "suite_human",
  graders: [
    { id: "gr_exact", type: "exact_match" },
    { id: "gr_h", type: "human", params: { instructions: "Is the answer right?" } },
  ],
  test_cases: [
    { id: "tc_1", input: "2+2?", expected_output: "4", graders: ["gr_exact", "gr_h"] },
    { id: "tc_2", input: "2+3?", expected_output: "5", graders: ["gr_exact", "gr_h"] },
  ],
  config: { provider: { model: "suite-model", api_base: mock.url }, retry: { max_attempts: 1 } },
});

interface Grader {
  grader_id: string;
  score: number | null;
  passed: boolean;
  reason?: string;
  metadata?: Record<string, unknown>;
}

describe("EvalPort human graders take the reviews", () => {
  it("exports the human grader with its reviewer; JSONL and CSV carry the reviews", async () => {
    const file = join(dir, "suite.json");
    writeFileSync(file, JSON.stringify(SUITE()));
    const store = join(dir, "stet.db");
    const run = await runCli(["run", file, "--store", store, "--json"]);
    expect(run.code, run.stderr).toBe(0);
    const runId = (JSON.parse(run.stdout) as { runId: string }).runId;

    const resultSet = async () => {
      const out = await runCli(["export", runId, "--format", "resultset", "--store", store]);
      expect(out.code, out.stderr).toBe(0);
      const doc = JSON.parse(out.stdout) as {
        results: { test_case_id: string; metadata: { stet: Record<string, unknown> } }[];
      };
      return doc.results.map((r) => ({
        id: r.test_case_id,
        human: (r as unknown as { grader_results: Grader[] }).grader_results.find(
          (g) => g.grader_id === "gr_h",
        )!,
        reviews: r.metadata.stet.reviews,
      }));
    };
    const before = await resultSet();
    expect(before[0]!.human).toMatchObject({
      score: null,
      passed: false,
      metadata: { skip_reason: "human_review_pending" },
    });

    writeFileSync(
      join(dir, "reviews.csv"),
      "sample_id,scorer,verdict,note\ntc_1,human:gr_h,pass,\ntc_2,human:gr_h,fail,6 is not 5\n",
    );
    const imported = await runCli(
      ["review", runId, "--import", join(dir, "reviews.csv"), "--store", store],
      { env: { STET_REVIEWER: "ada" } },
    );
    expect(imported.code, imported.stderr).toBe(0);

    const after = await resultSet();
    expect(after[0]!.human).toMatchObject({
      score: 1,
      passed: true,
      metadata: { reviewers: [{ reviewer: "ada", reviewed_at: expect.any(String) }] },
    });
    expect(after[0]!.human.metadata).not.toHaveProperty("skip_reason");
    expect(after[1]!.human).toMatchObject({ score: 0, passed: false, reason: "ada: 6 is not 5" });
    expect(after[1]!.reviews).toEqual([
      {
        scorer: "human:gr_h",
        reviewer: "ada",
        value: 0,
        note: "6 is not 5",
        created_at: expect.any(String),
      },
    ]);

    const jsonl = await runCli(["export", runId, "--format", "jsonl", "--store", store]);
    const rows = jsonl.stdout
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as { sampleId: string; reviews?: { reviewer: string }[] });
    expect(rows.map((r) => [r.sampleId, r.reviews?.map((v) => v.reviewer)])).toEqual([
      ["tc_1", ["ada"]],
      ["tc_2", ["ada"]],
    ]);
    const csv = await runCli(["export", runId, "--format", "csv", "--store", store]);
    const [header, first] = csv.stdout.trim().split("\n");
    expect(header!.split(",").slice(-2)).toEqual(["human:gr_h", "reviewers"]);
    expect(first!.split(",").slice(-2)).toEqual(["1", "ada"]);
  });
});
