import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { runEval } from "../runs/start-run.js";
import { resolveEval } from "../eval/resolve-eval.js";
import { startMockOpenAI, type MockOpenAI } from "../../test/helpers/mock-openai.js";
import { tempStore } from "../../test/helpers/temp-store.js";
import { buildResultSet, loadOutcomes } from "./build-result-set.js";
import { loadSuite } from "./load-suite.js";
import { fromResult } from "./result-mapping.js";
import { validateDocument } from "./validate-document.js";

let mock: MockOpenAI;
beforeAll(async () => {
  mock = await startMockOpenAI({
    reply: ({ key }) => (key.startsWith("Grade") ? '{"score": 0.7, "reason": "ok"}' : "Paris"),
  });
});
afterAll(() => mock.close());
const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

describe("exporting a suite run", () => {
  it("gives each test case the suite's grader ids and types, and round-trips", async () => {
    const t = tempStore();
    cleanups.push(t.cleanup);
    const path = join(t.dir, "suite.json");
    writeFileSync(
      path,
      JSON.stringify({
        version: "1.0.0",
        id: "suite_geo",
        graders: [
          { id: "gr_exact", type: "exact_match" },
          { id: "gr_contains", type: "contains", params: { substring: "Par" } },
          {
            id: "gr_judge",
            type: "llm_judge",
            params: { model: "j", prompt: "Grade {output}", threshold: 0.5 },
          },
          { id: "gr_sim", type: "semantic_similarity", params: { threshold: 0.8 } },
        ],
        test_cases: [
          {
            id: "tc_1",
            input: "Capital of France?",
            expected_output: "Paris",
            graders: ["gr_exact", "gr_judge"],
          },
          { id: "tc_2", input: "Capital again?", graders: ["gr_contains", "gr_sim"] },
        ],
        config: { provider: { model: "m", api_base: mock.url } },
      }),
    );
    const loaded = await loadSuite(path);
    const report = await runEval({
      store: t.store,
      eval: await resolveEval(loaded.eval, { baseDir: loaded.baseDir }),
    });
    const doc = await buildResultSet(t.store, report.runId);
    expect(validateDocument(doc, "resultset").errors).toEqual([]);
    expect(doc.suite_id).toBe("suite_geo");
    const graders = doc.results.map((r) =>
      r.grader_results.map((g) => [g.grader_id, g.type, g.score, g.passed]),
    );
    expect(graders).toEqual([
      [
        ["gr_exact", "exact_match", 1, true],
        ["gr_judge", "llm_judge", 0.7, true],
      ],
      [
        ["gr_contains", "contains", 1, true],
        ["gr_sim", "semantic_similarity", null, false],
      ],
    ]);
    // tc_2 has no expected output to compare embeddings with.
    expect(doc.results[1]!.grader_results[1]!.metadata).toMatchObject({
      skip_reason: "grader_error",
    });
    expect(doc.results.map((r) => r.passed)).toEqual([true, true]);

    const { run, outcomes } = await loadOutcomes(t.store, report.runId);
    doc.results.forEach((result, i) => {
      const { runId, attempt, ...fields } = outcomes[i]!;
      expect(fromResult(result, { scorers: run.config.scorers })).toEqual({
        ...fields,
        runId,
        storedAttempt: attempt,
      });
    });
  });
});
