import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it, onTestFinished } from "vitest";
import { runCli } from "./helpers/cli.js";
import { evalProject, questions, rawAttempts } from "./helpers/eval-project.js";
import { tempDir } from "./helpers/temp-store.js";

// The refusals of bad datasets (no store created, an existing one left byte-identical, file:line
// named) are cases of the bad-input corpus: test/fixtures/bad/run/datasets and manifest.jsonl,
// run by test/bad-input-corpus.test.ts. What stays here are behaviours that are not refusals.

describe("stet resume", () => {
  it("accepts a dataset emptied since the run started: the run's copy executes", async () => {
    const p = evalProject({
      "eval.mjs": `
import { defineEval, scorers } from "stet";
export default defineEval({
  name: "emptied",
  dataset: "./data.jsonl",
  solver: (sample) => {
    if (!process.env.FIXED) throw new Error("not yet");
    return sample.input.replace("question", "answer");
  },
  scorers: [scorers.exact()],
});
`,
      "data.jsonl": questions(2),
    });
    try {
      const run = await runCli(["run", "eval.mjs"], { cwd: p.dir });
      expect(run.code, run.stderr).toBe(3);
      const runId = run.stdout.match(/^run (r_\w+)/)![1]!;
      writeFileSync(join(p.dir, "data.jsonl"), "");
      const resumed = await runCli(["resume", runId], { cwd: p.dir, env: { FIXED: "1" } });
      expect(resumed.code, resumed.stderr).toBe(0);
      expect(resumed.stdout).toContain(
        "2 sample(s) no longer in the dataset run from the run's copy",
      );
    } finally {
      p.cleanup();
    }
  }, 60_000);
});

describe("stet validate of a ResultSet with a schema error", () => {
  it("names file:line:col of the offending value as well as its JSON path", async () => {
    const doc = JSON.parse(
      readFileSync(join(import.meta.dirname, "fixtures/evalport/examples/results.json"), "utf8"),
    );
    doc.results[1].passed = "yes";
    const text = JSON.stringify(doc, null, 2);
    const { dir, cleanup } = tempDir();
    onTestFinished(cleanup);
    const path = join(dir, "bad-results.json");
    writeFileSync(path, text);
    // Where the value "yes" stands, counted by hand from the text written.
    const before = text.slice(0, text.indexOf('"passed": "yes"') + '"passed": '.length);
    const line = before.split("\n").length;
    const column = before.length - before.lastIndexOf("\n");
    const result = await runCli(["validate", path]);
    expect(result.code).toBe(1);
    expect(result.stdout).toContain(
      `${path}:${line}:${column}: /results/1/passed: must be boolean, got "yes" [schema.type]`,
    );
  });
});

describe("a solver output that is not JSON", () => {
  it("is a solver error saying why; the run goes on and resume retries only those keys", async () => {
    const p = evalProject({
      "eval.mjs": `
import { defineEval, scorers } from "stet";
const nested = (n) => { let v = 1; for (let i = 0; i < n; i++) v = [v]; return v; };
export default defineEval({
  name: "outputs",
  dataset: [
    { id: "big", input: "big", target: "big" },
    { id: "circular", input: "circular", target: "circular" },
    { id: "deep", input: "deep", target: "deep" },
    { id: "fine", input: "fine", target: "fine" },
  ],
  solver: (sample) => {
    if (process.env.FIXED) return sample.input;
    if (sample.id === "big") return 10n;
    if (sample.id === "circular") { const o = { a: [] }; o.a.push(o); return o; }
    if (sample.id === "deep") return nested(100000);
    return sample.input;
  },
  scorers: [scorers.exact()],
});
`,
    });
    try {
      const run = await runCli(["run", "eval.mjs"], { cwd: p.dir });
      expect(run.code, run.stderr).toBe(3);
      expect(run.stderr).not.toMatch(/unexpected error|^\s+at /m);
      const runId = run.stdout.match(/^run (r_\w+)/)![1]!;
      const errors = Object.fromEntries(
        rawAttempts(p.db).map((a) => [a.sample_id, JSON.parse(String(a.error)) as unknown]),
      );
      expect(errors).toEqual({
        big: {
          type: "solver",
          message: expect.stringMatching(
            /^solver output is not JSON-serialisable: a BigInt \(10n\) is not JSON/,
          ),
        },
        circular: {
          type: "solver",
          message:
            "solver output is not JSON-serialisable: output.a.0: a circular reference to an enclosing value is not JSON",
        },
        deep: {
          type: "solver",
          message:
            "solver output is not JSON-serialisable: nesting too deep: more than 512 levels of arrays and objects",
        },
        fine: null,
      });

      const resumed = await runCli(["resume", runId], { cwd: p.dir, env: { FIXED: "1" } });
      expect(resumed.code, resumed.stderr).toBe(0);
      expect(resumed.stdout).toContain("plan: 1 preserved · 3 to execute");
      expect(rawAttempts(p.db)).toHaveLength(7);
    } finally {
      p.cleanup();
    }
  }, 60_000);
});
