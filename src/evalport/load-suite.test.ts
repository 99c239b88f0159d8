import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import type { Attempt } from "../core/types.js";
import { runEval } from "../runs/start-run.js";
import { resolveEval } from "../eval/resolve-eval.js";
import { startMockOpenAI, type MockOpenAI } from "../../test/helpers/mock-openai.js";
import { tempDir, tempStore } from "../../test/helpers/temp-store.js";
import { loadSuite } from "./load-suite.js";

const BASIC_SUITE = fileURLToPath(
  new URL("../../test/fixtures/evalport/examples/basic-suite.json", import.meta.url),
);

const REPLIES: Record<string, string> = {
  "Capital of France?": "paris",
  "Today's date?": "2026-01-15",
  "Pi to two decimals?": "It is about 3.141",
  "Give JSON": '```json\n{"action": "search"}\n```',
  "What is K8s?": "It orchestrates containers.",
  "Unknown grader?": "anything",
};

let mock: MockOpenAI;
const cleanups: (() => unknown)[] = [];
beforeAll(async () => {
  mock = await startMockOpenAI({
    reply: ({ key }) =>
      REPLIES[key] ?? (key.startsWith("Grade") ? '{"score": 0.8, "reason": "close"}' : "4"),
  });
});
afterAll(() => mock.close());
afterEach(async () => {
  mock.reset();
  vi.unstubAllEnvs();
  while (cleanups.length) await cleanups.pop()!();
});

function dir(): string {
  const t = tempDir();
  cleanups.push(t.cleanup);
  return t.dir;
}

function store() {
  const t = tempStore();
  cleanups.push(t.cleanup);
  return t.store;
}

function writeSuite(suite: object, files: Record<string, string> = {}): string {
  const d = dir();
  for (const [name, text] of Object.entries(files)) writeFileSync(join(d, name), text);
  const path = join(d, "suite.json");
  writeFileSync(path, JSON.stringify(suite, null, 2));
  return path;
}

const graders = [
  { id: "gr_exact", type: "exact_match", params: { ignore_case: true } },
  { id: "gr_contains", type: "contains", params: { substring: "Paris" } },
  { id: "gr_date", type: "regex", params: { pattern: "^\\d{4}-\\d{2}-\\d{2}$" } },
  { id: "gr_pi", type: "numeric", params: { handler: "stet.numeric", tolerance: 0.01 } },
  {
    id: "gr_schema",
    type: "json_schema",
    params: { schema: { type: "object", required: ["action"] } },
  },
  {
    id: "gr_judge",
    type: "llm_judge",
    params: { model: "judge-model", prompt: "Grade {output} against {expected}. {context}" },
  },
  { id: "gr_semantic", type: "semantic_similarity", params: { threshold: 0.8 } },
  { id: "gr_custom", type: "custom", params: { handler: "com.example.unknown" } },
];

function fullSuite(apiBase: string) {
  return {
    version: "1.0.0",
    id: "suite_all_graders",
    graders,
    test_cases: [
      {
        id: "tc_capital",
        input: "Capital of France?",
        expected_output: "Paris",
        context: ["France's capital is Paris."],
        graders: ["gr_exact", "gr_contains", "gr_judge"],
      },
      { id: "tc_date", input: "Today's date?", graders: ["gr_date"] },
      { id: "tc_pi", input: "Pi to two decimals?", expected_output: "3.14", graders: ["gr_pi"] },
      { id: "tc_json", input: "Give JSON", graders: ["gr_schema"], metadata: { kind: "json" } },
      {
        id: "tc_unsupported",
        input: "What is K8s?",
        graders: [
          "gr_semantic",
          "gr_custom",
          { id: "gr_inline", type: "contains", params: { substring: "containers" } },
        ],
      },
    ],
    config: {
      provider: { model: "suite-model", api_base: apiBase, temperature: 0, max_tokens: 50 },
      parallel: 2,
    },
  };
}

const scoresOf = (attempts: Attempt[], id: string) =>
  Object.fromEntries(
    attempts
      .find((a) => a.sampleId === id)!
      .scores.filter((s) => s.skipped !== "not_referenced")
      .map((s) => [s.scorer, s.value ?? s.skipped]),
  );

describe("loadSuite", () => {
  it("runs a suite end to end: every grader type, per-test-case references, provider defaults", async () => {
    const loaded = await loadSuite(writeSuite(fullSuite(mock.url)));
    expect(loaded.eval).toMatchObject({ name: "suite_all_graders", concurrency: 2 });
    const s = store();
    const report = await runEval({
      store: s,
      eval: await resolveEval(loaded.eval, { baseDir: loaded.baseDir }),
    });
    expect(report.status).toBe("completed");
    const attempts = await s.reads.listAttempts(report.runId);
    expect(attempts.every((a) => a.status === "scored")).toBe(true);
    expect(scoresOf(attempts, "tc_capital")).toEqual({
      gr_exact: 1,
      gr_contains: 0,
      gr_judge: 0.8,
    });
    expect(scoresOf(attempts, "tc_date")).toEqual({ gr_date: 1 });
    expect(scoresOf(attempts, "tc_pi")).toEqual({ gr_pi: 1 });
    expect(scoresOf(attempts, "tc_json")).toEqual({ gr_schema: 1 });
    expect(scoresOf(attempts, "tc_unsupported")).toEqual({
      gr_semantic: "grader_error",
      gr_custom: "unsupported_grader_type",
      gr_inline: 1,
    });
    const capital = attempts.find((a) => a.sampleId === "tc_capital")!;
    expect(capital.scores.find((s) => s.scorer === "gr_contains")?.metadata).toMatchObject({
      "evalport.grader_type": "contains",
      "evalport.passed": false,
    });
    expect(capital.scores.find((s) => s.scorer === "gr_date")).toEqual({
      scorer: "gr_date",
      value: null,
      skipped: "not_referenced",
    });

    const solverCalls = mock.requests.filter((r) => r.body.model === "suite-model");
    expect(solverCalls).toHaveLength(5);
    expect(solverCalls[0]!.body).toMatchObject({ temperature: 0, max_tokens: 50 });
    const judge = mock.requests.filter((r) => r.body.model === "judge-model");
    expect(judge.map((r) => r.key)).toEqual([
      "Grade paris against Paris. France's capital is Paris.",
    ]);
    const metrics = Object.fromEntries(report.metrics.map((m) => [m.scorer, m.mean]));
    expect(metrics).toMatchObject({ gr_exact: 1, gr_semantic: null, gr_inline: 1 });
  });

  it("lets --model (ctx.model) override the suite's model, but not the judge's", async () => {
    const loaded = await loadSuite(writeSuite(fullSuite(mock.url)));
    await runEval({
      store: store(),
      eval: await resolveEval(loaded.eval, { baseDir: loaded.baseDir, limit: 1 }),
      model: "openai:override",
    });
    expect(mock.requests.map((r) => r.body.model).sort()).toEqual(["judge-model", "override"]);
  });

  it("refuses an invalid suite before anything runs, listing path and code", async () => {
    const suite = fullSuite(mock.url);
    suite.test_cases[0]!.graders = ["gr_missing"];
    const loading = loadSuite(writeSuite(suite));
    await expect(loading).rejects.toMatchObject({ code: "E_INVALID_INPUT" });
    await expect(loading).rejects.toThrow(
      /suite\.json:\d+:\d+: \/test_cases\/0\/graders\/0: grader "gr_missing" is not defined .*\[suite\.dangling_grader_ref\]/,
    );
    expect(mock.requests).toHaveLength(0);
  });

  it("reads test_cases_file relative to the suite", async () => {
    const lines = [
      { id: "tc_a", input: "2+2?", expected_output: "4", graders: ["gr_exact"] },
      { id: "tc_b", input: "3+1?", expected_output: "4", graders: ["gr_exact"] },
    ];
    const path = writeSuite(
      {
        version: "1.0.0",
        id: "jsonl_suite",
        test_cases_file: "cases.jsonl",
        graders: [{ id: "gr_exact", type: "exact_match" }],
        config: { provider: { model: "m", api_base: mock.url } },
      },
      { "cases.jsonl": lines.map((l) => JSON.stringify(l)).join("\n") + "\n" },
    );
    const loaded = await loadSuite(path);
    const resolved = await resolveEval(loaded.eval, { baseDir: loaded.baseDir });
    expect(resolved.samples.map((r) => r.sample.id)).toEqual(["tc_a", "tc_b"]);
    const report = await runEval({ store: store(), eval: resolved });
    expect(report.metrics).toEqual([expect.objectContaining({ scorer: "gr_exact", mean: 1 })]);
  });

  it("names file and line of a broken test_cases_file line", async () => {
    const path = writeSuite(
      {
        version: "1.0.0",
        id: "broken",
        test_cases_file: "cases.jsonl",
        graders: [{ id: "g", type: "exact_match" }],
      },
      { "cases.jsonl": '{"id":"a","input":"x","graders":["g"]}\n{"id":"b", "input": \n' },
    );
    const loading = loadSuite(path);
    await expect(loading).rejects.toMatchObject({ code: "E_INVALID_INPUT" });
    await expect(loading).rejects.toThrow(/cases\.jsonl:2:\d+: line 2 is not JSON/);
  });

  it("loads and runs the spec's examples/basic-suite.json in place", async () => {
    vi.stubEnv("OPENAI_BASE_URL", mock.url);
    vi.stubEnv("OPENAI_API_KEY", "");
    const loaded = await loadSuite(BASIC_SUITE);
    expect(loaded.eval.name).toBe("suite_qa_basic");
    const resolved = await resolveEval(loaded.eval, { baseDir: loaded.baseDir });
    expect(resolved.samples.map((r) => [r.sample.id, r.sample.target])).toEqual([
      ["tc_1", "4"],
      ["tc_2", "100"],
    ]);
    const report = await runEval({ store: store(), eval: resolved });
    // The mock answers "4" to both: right for tc_1, wrong for tc_2.
    expect(report.metrics).toEqual([expect.objectContaining({ scorer: "gr_exact", mean: 0.5 })]);
    expect(mock.requests.every((r) => r.body.model === "gpt-4o")).toBe(true);
  });
});
