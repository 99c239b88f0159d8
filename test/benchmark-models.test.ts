import Database from "better-sqlite3";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli, startCli } from "./helpers/cli.js";
import { perTest, questions, rawAttempts } from "./helpers/eval-project.js";
import { startMockOpenAI, type MockOpenAI } from "./helpers/mock-openai.js";
import { until } from "./helpers/wait.js";

// `stet run --model a --model b --model c`: one run per model in one benchmark, one table;
// killed, `stet resume <benchmark>` executes only each run's unfinished keys. And `stet run
// --dataset` evaluates a dataset with no eval module. Real CLI, a local OpenAI-format server.
const { project } = perTest();

const EVAL = `import { defineEval, scorers, solvers } from "stet";
export default defineEval({
  name: "trio",
  dataset: "./data.jsonl",
  solver: solvers.chat({ model: "default-model" }),
  scorers: [scorers.exact()],
  concurrency: 6,
});
`;

let mock: MockOpenAI;
beforeAll(async () => {
  // "good" answers with the input (right), the others with the wrong text; 20 ms a request.
  mock = await startMockOpenAI({
    latencyMs: 20,
    reply: ({ key, body }) => (body.model === "good" ? key.replace("question", "answer") : "no"),
  });
});
afterAll(() => mock.close());

const env = () => ({ OPENAI_BASE_URL: mock.url, OPENAI_API_KEY: "sk-test" });

/** Requests per model and sample since `from`. */
function requestsByModel(from: number): Map<string, Map<string, number>> {
  const by = new Map<string, Map<string, number>>();
  for (const r of mock.requests.slice(from)) {
    const model = String(r.body.model);
    const keys = by.get(model) ?? new Map<string, number>();
    keys.set(r.key, (keys.get(r.key) ?? 0) + 1);
    by.set(model, keys);
  }
  return by;
}

interface StoredRun {
  id: string;
  config: { benchmark?: string; model?: string; concurrency: number };
}

function storedRuns(db: string): StoredRun[] {
  const conn = new Database(db, { readonly: true });
  try {
    return (
      conn.prepare("SELECT id, config FROM runs").all() as { id: string; config: string }[]
    ).map((r) => ({ id: r.id, config: JSON.parse(r.config) as StoredRun["config"] }));
  } finally {
    conn.close();
  }
}

describe("several models in one command", () => {
  it("starts one run per model in one benchmark, shares the concurrency, prints one table", async () => {
    const p = project({ "eval.mjs": EVAL, "data.jsonl": questions(6) });
    const from = mock.requests.length;
    const run = await runCli(
      ["run", "eval.mjs", "--model", "good", "--model", "bad", "--model", "worse"],
      {
        cwd: p.dir,
        env: env(),
      },
    );
    expect(run.code, run.stderr).toBe(0);
    const benchmark = /^benchmark (b_[a-z0-9]{10}) · 3 runs/m.exec(run.stdout)![1]!;
    const runs = storedRuns(p.db);
    expect(runs).toHaveLength(3);
    expect(runs.map((r) => r.config.model).sort()).toEqual(["bad", "good", "worse"]);
    // The eval's concurrency of 6, shared: 2 each.
    for (const r of runs) expect(r.config).toMatchObject({ benchmark, concurrency: 2 });
    // Each model asked each sample once.
    const asked = requestsByModel(from);
    for (const model of ["good", "bad", "worse"]) {
      expect([...asked.get(model)!.values()]).toEqual([1, 1, 1, 1, 1, 1]);
    }
    // One table: a row per model with its mean and interval, errors, spend, time.
    const table = run.stdout.slice(run.stdout.lastIndexOf(`benchmark ${benchmark}\n`));
    expect(table).toMatch(/^model\s+run\s+status\s+exact\s+errors\s+spend\s+time$/m);
    expect(table).toMatch(
      /^good\s+r_\w+\s+completed\s+1\.000 \[1\.00, 1\.00\]\s+0\s+unknown\s+\S+$/m,
    );
    expect(table).toMatch(
      /^bad\s+r_\w+\s+completed\s+0\.000 \[0\.00, 0\.00\]\s+0\s+unknown\s+\S+$/m,
    );
    expect(table).toMatch(/^worse\s+r_\w+\s+completed\s+0\.000/m);

    const json = await runCli(["resume", benchmark, "--json"], { cwd: p.dir, env: env() });
    expect(json.code, json.stderr).toBe(0);
    const doc = JSON.parse(json.stdout) as { benchmarkId: string; runs: { model: string }[] };
    expect(doc.benchmarkId).toBe(benchmark);
    expect(doc.runs.map((r) => r.model).sort()).toEqual(["bad", "good", "worse"]);
    expect(mock.requests.length - from).toBe(18); // the no-op resume asked nothing
  });

  it("killed mid-way, `stet resume <benchmark>` executes only the unfinished keys of every run", async () => {
    const p = project({ "eval.mjs": EVAL, "data.jsonl": questions(60) });
    const from = mock.requests.length;
    const first = startCli(
      [
        "run",
        "eval.mjs",
        "--model",
        "good",
        "--model",
        "bad",
        "--model",
        "worse",
        "--concurrency",
        "3",
      ],
      { cwd: p.dir, env: env() },
    );
    const benchmark = (await first.waitFor(/^benchmark (b_[a-z0-9]{10})/m))[1]!;
    await until(() => rawAttempts(p.db).length >= 15, "15 committed attempts", 60_000);
    first.child.kill("SIGKILL");
    await first.done;
    const before = rawAttempts(p.db) as unknown as { run_id: string; sample_id: string }[];
    const runs = storedRuns(p.db);
    const modelOf = new Map(runs.map((r) => [r.id, r.config.model!]));
    const done = new Set(before.map((a) => `${modelOf.get(a.run_id)}/${a.sample_id}`));
    expect(done.size).toBeLessThan(180);
    const killedAt = mock.requests.length;

    const resumed = await runCli(["resume", benchmark], { cwd: p.dir, env: env() });
    expect(resumed.code, resumed.stderr).toBe(0);
    // Nothing finished before the kill was asked again, in any run.
    const again = requestsByModel(killedAt);
    for (const [model, keys] of again)
      for (const key of keys.keys()) {
        const id = `q${key.replace("question ", "").padStart(3, "0")}`;
        expect(done.has(`${model}/${id}`), `${model}/${id} asked again`).toBe(false);
      }
    // Every key of every run has exactly one attempt; at most the 3 in flight were asked twice.
    const after = rawAttempts(p.db) as unknown as { run_id: string; status: string }[];
    expect(after).toHaveLength(180);
    expect(after.every((a) => a.status === "scored")).toBe(true);
    expect(mock.requests.length - from - 180).toBeLessThanOrEqual(3);
    expect(resumed.stdout).toMatch(/^good\s+r_\w+\s+completed\s+1\.000/m);
  });
});

describe("stet run --dataset: no eval module", () => {
  it("asks the model each row, scores with the named scorers, and resumes from what it recorded", async () => {
    const p = project({ "qa.jsonl": questions(4) });
    const from = mock.requests.length;
    const run = await runCli(
      [
        "run",
        "--dataset",
        "qa.jsonl",
        "--model",
        "good",
        "--scorer",
        "exact",
        "--scorer",
        "includes",
        "--system",
        "Be brief.",
      ],
      { cwd: p.dir, env: env() },
    );
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toMatch(/^run (r_\w+) · qa · 4 keys/m);
    expect(run.stdout).toMatch(/exact\s+1\.0000/);
    expect(run.stdout).toMatch(/includes\s+1\.0000/);
    const sent = mock.requests.slice(from);
    expect(sent).toHaveLength(4);
    expect(sent[0]!.body).toMatchObject({
      model: "good",
      messages: [{ role: "system", content: "Be brief." }, { role: "user" }],
    });
    const runId = /^run (r_\w+)/m.exec(run.stdout)![1]!;
    const [stored] = storedRuns(p.db);
    expect(stored!.config).toMatchObject({
      datasetEval: { model: "good", scorers: ["exact", "includes"], system: "Be brief." },
    });
    // A resume needs no file: the run rebuilds its eval from what it recorded.
    const resumed = await runCli(["resume", runId], { cwd: p.dir, env: env() });
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(resumed.stdout).toContain("nothing to execute");
    expect(mock.requests.length - from).toBe(4);
  });

  it("refuses a dataset without a model, an unknown scorer, and an eval file with --dataset (exit 2)", async () => {
    const p = project({ "qa.jsonl": questions(2), "eval.mjs": EVAL });
    for (const [args, message] of [
      [["run", "--dataset", "qa.jsonl"], "--dataset needs --model"],
      [
        ["run", "--dataset", "qa.jsonl", "--model", "m", "--scorer", "nope"],
        'unknown --scorer "nope"',
      ],
      [
        ["run", "eval.mjs", "--dataset", "qa.jsonl", "--model", "m"],
        "--dataset evaluates a dataset without an eval file",
      ],
      [["run"], "name an eval file, or a dataset with --dataset"],
    ] as const) {
      const result = await runCli([...args], { cwd: p.dir, env: env() });
      expect(result.code, args.join(" ")).toBe(2);
      expect(result.stderr).toContain(message);
    }
    expect(() => rawAttempts(p.db)).toThrow(); // no store was made
  });
});
