import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli } from "./helpers/cli.js";
import { evalProject, questions, rawAttempts } from "./helpers/eval-project.js";

// Every mistake in a dataset gets a fast, clear answer through the real CLI: exit 1 or 2, a
// message naming the file and line (or the eval and row), no stack trace, and no run: the store
// is not created when there was none, and stays byte-identical when there was one.

/** An eval of `dataset` (a JS expression) whose solver echoes the input. */
const evalOf = (name: string, dataset: string) => `
import { defineEval, scorers } from "stet";
export default defineEval({
  name: ${JSON.stringify(name)},
  dataset: ${dataset},
  solver: (sample) => sample.input,
  scorers: [scorers.exact()],
});
`;

const nested = (levels: number) => "[".repeat(levels) + "1" + "]".repeat(levels);
const latin1 = (text: string) => Buffer.from(text, "latin1");

const files: Record<string, string | Buffer> = {
  "good.mjs": evalOf("good", '"./good.jsonl"'),
  "good.jsonl": questions(3),
  "empty.jsonl": "",
  "blank.jsonl": "\n  \n\r\n",
  "header.csv": "id,input,target\n",
  "empty.json": "[]\n",
  "deep.jsonl": `{"input":"a"}\n{"input":${nested(1_000)}}\n`,
  "deep.json": `[{"input":"a"},\n {"input":${nested(1_000)}}]\n`,
  "latin.jsonl": latin1('{"input":"a"}\n{"input":"caf\u00e9"}\n'),
  "latin.csv": latin1("input\nna\u00efve\n"),
  "dup.jsonl": '{"input":"a: 1"}\n{"input":"b","target":"x","input":"c"}\n',
  "dup.json": '[\n  {"input": "a"},\n  {"input": "b", "metadata": {"k": 1, "k": 2}}\n]\n',
};
for (const name of Object.keys(files).filter((f) => /\.(jsonl|json|csv)$/.test(f))) {
  const stem = name.replace(/\W/g, "-");
  files[`${stem}.mjs`] = evalOf(stem, JSON.stringify(`./${name}`));
}
files["inline-empty.mjs"] = evalOf("inline-empty", "[]");
files["flaky.mjs"] = evalOf(
  "flaky",
  `(async function* () {
    yield { input: "a" };
    yield { input: "b" };
    throw new Error("socket closed");
  })()`,
);

let project: ReturnType<typeof evalProject>;
beforeAll(async () => {
  project = evalProject({});
  for (const [name, content] of Object.entries(files)) {
    writeFileSync(join(project.dir, name), content);
  }
  // The store a bad input must leave alone.
  const good = await runCli(["run", "good.mjs"], { cwd: project.dir });
  expect(good.code, good.stderr).toBe(0);
}, 60_000);
afterAll(() => project.cleanup());

/** Every file of the store directory, byte for byte. */
function storeBytes(): Map<string, Buffer> {
  const dir = join(project.dir, ".stet");
  return new Map(readdirSync(dir).map((name) => [name, readFileSync(join(dir, name))]));
}

function expectClearRefusal(result: { code: number | null; stderr: string }, message: RegExp) {
  expect([1, 2], result.stderr).toContain(result.code);
  expect(result.stderr.trim()).toMatch(message);
  expect(result.stderr).not.toMatch(/unexpected error/);
  expect(result.stderr).not.toMatch(/^\s+at /m);
  expect(result.stderr.trim().split("\n")).toHaveLength(1);
}

const escape = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
const at = (file: string) => escape(join(project.dir, file));

const cases: [string, string, () => RegExp][] = [
  ["an empty file", "empty-jsonl.mjs", () => new RegExp(`no samples in ${at("empty.jsonl")}$`)],
  ["blank lines only", "blank-jsonl.mjs", () => new RegExp(`no samples in ${at("blank.jsonl")}$`)],
  [
    "a CSV with only a header",
    "header-csv.mjs",
    () => new RegExp(`no samples in ${at("header.csv")}$`),
  ],
  ["an empty JSON array", "empty-json.mjs", () => new RegExp(`no samples in ${at("empty.json")}$`)],
  [
    "an empty inline array",
    "inline-empty.mjs",
    () => /no samples in the dataset of eval "inline-empty"$/,
  ],
  [
    "a JSONL row nested 1,000 levels deep",
    "deep-jsonl.mjs",
    () => new RegExp(`nesting too deep at ${at("deep.jsonl")}:2:\\d+: .*512 levels`),
  ],
  [
    "a JSON array row nested 1,000 levels deep",
    "deep-json.mjs",
    () => new RegExp(`nesting too deep at ${at("deep.json")}:2:\\d+: .*512 levels`),
  ],
  [
    "a JSONL file that is not UTF-8",
    "latin-jsonl.mjs",
    () => new RegExp(`${at("latin.jsonl")}:2:14: not UTF-8 \\(byte 0xE9\\)`),
  ],
  [
    "a CSV file that is not UTF-8",
    "latin-csv.mjs",
    () => new RegExp(`${at("latin.csv")}:2:3: not UTF-8 \\(byte 0xEF\\)`),
  ],
  [
    "a JSONL row that repeats a key",
    "dup-jsonl.mjs",
    () => new RegExp(`${at("dup.jsonl")}:2:27: duplicate key "input"`),
  ],
  [
    "a JSON array row that repeats a key",
    "dup-json.mjs",
    () => new RegExp(`${at("dup.json")}:3:39: duplicate key "k"`),
  ],
  [
    "an async iterable that throws at row 3",
    "flaky.mjs",
    () => /the dataset of eval "flaky" threw reading row 3 \(dataset\[2\]\): socket closed$/,
  ],
];

describe("stet run refuses a bad dataset, creating no run", () => {
  it.each(cases)("%s", async (_, evalFile, message) => {
    // No store yet: none is created.
    const fresh = join(project.dir, "fresh.db");
    const first = await runCli(["run", evalFile, "--store", fresh], { cwd: project.dir });
    expectClearRefusal(first, message());
    expect(existsSync(fresh)).toBe(false);

    // A store with a run in it: not one byte changes.
    const before = storeBytes();
    const second = await runCli(["run", evalFile], { cwd: project.dir });
    expectClearRefusal(second, message());
    expect(storeBytes()).toEqual(before);
  });
});

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

describe("stet validate", () => {
  it("names file:line:col of a repeated key", async () => {
    const path = join(project.dir, "repeated.jsonl");
    writeFileSync(
      path,
      '{"test_case_id":"a","passed":true,"grader_results":[]}\n' +
        '{"test_case_id":"b","passed":true,"grader_results":[],"passed":false}\n',
    );
    const result = await runCli(["validate", path]);
    expect(result.code).toBe(1);
    expect(result.stdout).toContain(
      `${path}:2:55: /passed: duplicate key "passed": JSON keeps only the last value [json.duplicate_key]`,
    );
  });
});

describe("stet validate of a ResultSet with a schema error", () => {
  it("names file:line:col of the offending value as well as its JSON path", async () => {
    const doc = JSON.parse(
      readFileSync(join(import.meta.dirname, "fixtures/evalport/examples/results.json"), "utf8"),
    );
    doc.results[1].passed = "yes";
    const text = JSON.stringify(doc, null, 2);
    const path = join(project.dir, "bad-results.json");
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
