import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { runCli } from "./helpers/cli.js";
import { dumpDb } from "./helpers/db-dump.js";
import { perTest } from "./helpers/eval-project.js";
import { startMockOpenAI, type MockOpenAI } from "./helpers/mock-openai.js";

/** q1 … q10; the mock answers the even ones right ("answer N") and the odd ones wrong. */
const DATA = Array.from({ length: 10 }, (_, i) =>
  JSON.stringify({ id: `q${i + 1}`, input: `question ${i + 1}`, target: `answer ${i + 1}` }),
).join("\n");

function evalFile(options: { name?: string; model?: string; temperature?: number } = {}): string {
  const { name = "identity", model = "gpt-4o-mini", temperature = 0 } = options;
  return `
import { defineEval, scorers, solvers } from "stet";
export default defineEval({
  name: ${JSON.stringify(name)},
  dataset: "./data.jsonl",
  solver: solvers.chat({ model: ${JSON.stringify(model)}, temperature: ${temperature}, baseURL: process.env.MOCK_URL }),
  scorers: [scorers.exact()],
  concurrency: 2,
});
`;
}

let mock: MockOpenAI;
/** Keys the mock answers with HTTP 400 (a provider error that is not retried). */
let failing = new Set<string>();
/** Delay of every answer, for races. */
let latencyMs = 0;
beforeAll(async () => {
  mock = await startMockOpenAI({
    latencyMs: 0,
    respond: ({ key }) =>
      latencyMs > 0 && !failing.has(key)
        ? { reply: replyTo(key), latencyMs }
        : failing.has(key)
          ? { status: 400, body: { error: { message: "no" } } }
          : undefined,
    reply: ({ key }) => replyTo(key),
  });
});
afterAll(() => mock.close());
beforeEach(() => {
  mock.reset();
  failing = new Set();
  latencyMs = 0;
});

function replyTo(key: string): string {
  const n = Number(key.split(" ")[1]);
  return n % 2 === 0 ? `answer ${n}` : "wrong";
}

const { project } = perTest();
const requests = () => Object.values(mock.counts()).reduce((a, b) => a + b, 0);

function setup(files: Record<string, string> = {}) {
  const p = project({ "eval.mjs": evalFile(), "data.jsonl": DATA, ...files });
  const env = { MOCK_URL: mock.url, OPENAI_API_KEY: "sk-test" };
  const stet = (...args: string[]) => runCli(args, { cwd: p.dir, env });
  return { p, stet };
}

async function showJson(stet: (...a: string[]) => Promise<{ stdout: string }>, ...args: string[]) {
  return JSON.parse((await stet("show", ...args, "--json")).stdout);
}

describe("run identity", () => {
  it("refuses a resume with another model, writes nothing; --allow-eval-change records the change", async () => {
    const { p, stet } = setup();
    failing = new Set(["question 5"]);
    const first = await stet("run", "eval.mjs", "--json");
    expect(first.code).toBe(3); // q5 errored: the run is resumable
    const runId = JSON.parse(first.stdout).runId as string;
    const recorded = (await showJson(stet, runId)).config.identity;
    expect(recorded).toMatchObject({
      evalName: "identity",
      solver: { kind: "chat", model: "gpt-4o-mini", temperature: 0, baseURL: mock.url },
      scorers: [{ name: "exact", config: { kind: "exact", caseSensitive: true } }],
      epochs: 1,
      evalFileSha256: expect.stringMatching(/^[0-9a-f]{64}$/),
    });

    failing = new Set();
    mock.reset();
    writeFileSync(join(p.dir, "eval.mjs"), evalFile({ model: "gpt-4o", temperature: 0.7 }));
    const before = dumpDb(p.db);
    const refused = await stet("resume", runId);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain(`run ${runId} was started with another eval`);
    expect(refused.stderr).toContain('solver.model: "gpt-4o-mini" → "gpt-4o"');
    expect(refused.stderr).toContain("solver.temperature: 0 → 0.7");
    expect(refused.stderr).toContain("--allow-eval-change");
    // `run --resume` takes the same way.
    expect((await stet("run", "eval.mjs", "--resume", runId)).code).toBe(1);
    expect(requests()).toBe(0);
    expect(dumpDb(p.db)).toBe(before);

    const accepted = await stet("resume", runId, "--allow-eval-change", "--json");
    expect(accepted.code).toBe(0);
    expect(mock.counts()).toEqual({ "question 5": 1 });
    expect(mock.requests[0]!.body.model).toBe("gpt-4o");
    const { config } = await showJson(stet, runId);
    expect(config.identity.solver).toMatchObject({ model: "gpt-4o", temperature: 0.7 });
    expect(config.history).toEqual([
      {
        at: expect.any(String),
        change: "eval-changed",
        differences: expect.arrayContaining([
          { field: "solver.model", recorded: "gpt-4o-mini", current: "gpt-4o" },
          { field: "solver.temperature", recorded: 0, current: 0.7 },
          {
            field: "evalFileSha256",
            recorded: recorded.evalFileSha256,
            current: expect.stringMatching(/^[0-9a-f]{64}$/),
          },
        ]),
      },
    ]);
  });

  it("points a change of scorers to stet rescore, and refuses --model other than the run's", async () => {
    const { p, stet } = setup();
    failing = new Set(["question 2"]);
    const runId = JSON.parse((await stet("run", "eval.mjs", "--json")).stdout).runId as string;
    mock.reset();
    const before = dumpDb(p.db);
    const badModel = await stet("resume", runId, "--model", "gpt-4o");
    expect(badModel.code).toBe(1);
    expect(badModel.stderr).toContain('executes model "gpt-4o-mini", not "gpt-4o"');

    writeFileSync(
      join(p.dir, "eval.mjs"),
      evalFile().replace("scorers.exact()", "scorers.exact({ caseSensitive: false })"),
    );
    const scorers = await stet("resume", runId);
    expect(scorers.code).toBe(1);
    expect(scorers.stderr).toContain(
      `run ${runId} was started with other scorers than the ones given now:\n`,
    );
    expect(scorers.stderr).toContain(`stet rescore ${runId}`);
    expect(scorers.stderr).toContain("scorers.exact:");
    expect(requests()).toBe(0);
    expect(dumpDb(p.db)).toBe(before);
  });

  it("accepts an eval file whose bytes alone changed, and records it in the history", async () => {
    const { p, stet } = setup();
    failing = new Set(["question 4"]);
    const runId = JSON.parse((await stet("run", "eval.mjs", "--json")).stdout).runId as string;
    failing = new Set();
    writeFileSync(join(p.dir, "eval.mjs"), `// a comment\n${evalFile()}`);
    const resumed = await stet("resume", runId);
    expect(resumed.code).toBe(0);
    expect(mock.counts()).toMatchObject({ "question 4": 2 });
    const { config } = await showJson(stet, runId);
    expect(config.history).toEqual([
      {
        at: expect.any(String),
        change: "eval-changed",
        differences: [
          { field: "evalFileSha256", recorded: expect.any(String), current: expect.any(String) },
        ],
      },
    ]);
  });
});

describe("the identity of a function solver", () => {
  const TS_EVAL = `
import { defineEval, scorers } from "stet";
const shout = (text: string): string => text.toUpperCase();
export default defineEval({
  name: "fn",
  dataset: [{ id: "a", input: "a", target: "A" }, { id: "b", input: "b", target: "B" }],
  solver: async function solve(sample: { id: string; input: unknown }) {
    if (sample.id === "b" && process.env.FAIL_B === "1") throw new Error("not yet");
    return shout(String(sample.input));
  },
  scorers: [scorers.exact()],
});
`;

  it("is the same loaded by the bundle or by tsx; an edit of the function is refused", async () => {
    const p = project({ "eval.ts": TS_EVAL });
    const stet = (env: NodeJS.ProcessEnv, ...args: string[]) => runCli(args, { cwd: p.dir, env });
    const first = await stet({ FAIL_B: "1" }, "run", "eval.ts", "--run-id", "fn-1");
    expect(first.code).toBe(3);
    const resumed = await stet({ STET_TS_LOADER: "tsx" }, "resume", "fn-1");
    expect(resumed.stderr).not.toContain("another eval");
    expect(resumed.code).toBe(0);

    const second = await stet({ FAIL_B: "1" }, "run", "eval.ts", "--run-id", "fn-2");
    expect(second.code).toBe(3);
    // The function's own text: what its identity hashes (a helper it calls is not part of it).
    writeFileSync(join(p.dir, "eval.ts"), TS_EVAL.replace("return shout(", "return shout(' ' + "));
    const before = dumpDb(p.db);
    const refused = await stet({}, "resume", "fn-2");
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain("solver.sourceSha256");
    expect(dumpDb(p.db)).toBe(before);
  });
});

describe("stet run --run-id", () => {
  it("runs once; the same command again makes no request, exits 0 and says the run is complete", async () => {
    const { stet } = setup();
    const first = await stet("run", "eval.mjs", "--run-id", "nightly-7");
    expect(first.code).toBe(0);
    expect(requests()).toBe(10);
    mock.reset();
    const again = await stet("run", "eval.mjs", "--run-id", "nightly-7");
    expect(again.code).toBe(0);
    expect(again.stdout).toContain("run nightly-7 is complete: nothing to execute");
    expect(requests()).toBe(0);
    const list = JSON.parse((await stet("list", "--json")).stdout);
    expect(list).toEqual([expect.objectContaining({ id: "nightly-7", status: "completed" })]);
  });

  it("resumes an unfinished run of the same id: only its errored key", async () => {
    const { stet } = setup();
    failing = new Set(["question 3"]);
    expect((await stet("run", "eval.mjs", "--run-id", "ci.42")).code).toBe(3);
    failing = new Set();
    mock.reset();
    const again = await stet("run", "eval.mjs", "--run-id", "ci.42");
    expect(again.code).toBe(0);
    expect(mock.counts()).toEqual({ "question 3": 1 });
  });

  it("two of the same command at once execute every key once between them", async () => {
    const { stet } = setup();
    latencyMs = 150;
    const [a, b] = await Promise.all([
      stet("run", "eval.mjs", "--run-id", "race"),
      stet("run", "eval.mjs", "--run-id", "race"),
    ]);
    // One executes the run; the other finds it owned by a live process (exit 5) or complete (0).
    expect([a.code, b.code].sort()).toEqual(expect.arrayContaining([0]));
    expect([a.code, b.code].every((c) => c === 0 || c === 5)).toBe(true);
    expect(Object.values(mock.counts()).every((n) => n === 1)).toBe(true);
    expect(requests()).toBe(10);
    const list = JSON.parse((await stet("list", "--json")).stdout);
    expect(list).toEqual([expect.objectContaining({ id: "race", status: "completed" })]);
  });

  it("refuses an id of a run of another eval, and malformed ids, writing nothing", async () => {
    const { p, stet } = setup({ "other.mjs": evalFile({ name: "other" }) });
    expect((await stet("run", "eval.mjs", "--run-id", "nightly-7")).code).toBe(0);
    mock.reset();
    const before = dumpDb(p.db);
    const other = await stet("run", "other.mjs", "--run-id", "nightly-7");
    expect(other.code).toBe(1);
    expect(other.stderr).toContain('is a run of eval "identity", not of "other"');
    for (const bad of ["has space", "a/b", "x".repeat(65), "..", "é"]) {
      const refused = await stet("run", "eval.mjs", "--run-id", bad);
      expect(refused.code, bad).toBe(2);
      expect(refused.stderr).toContain("invalid run id");
    }
    expect(requests()).toBe(0);
    expect(dumpDb(p.db)).toBe(before);
  });

  it("looks an id up before the eval loads, creating no store: for an existing run --detach and another --reuse are refused naming it, a broken dataset unread, nothing written", async () => {
    const { p, stet } = setup();
    writeFileSync(join(p.dir, "data.jsonl"), "not json\n");
    // No store yet: the lookup makes none, and the eval's dataset refuses as for any new run.
    const fresh = await stet("run", "eval.mjs", "--run-id", "nightly-7");
    expect(fresh.code).toBe(1);
    expect(fresh.stderr).toContain("data.jsonl:1");
    expect(existsSync(p.db)).toBe(false);
    writeFileSync(join(p.dir, "data.jsonl"), DATA);
    expect((await stet("run", "eval.mjs", "--run-id", "nightly-7")).code).toBe(0);
    writeFileSync(join(p.dir, "data.jsonl"), "not json\n");
    mock.reset();
    const before = dumpDb(p.db);
    const detach = await stet("run", "eval.mjs", "--run-id", "nightly-7", "--batch", "--detach");
    expect(detach.code).toBe(2);
    expect(detach.stderr).toContain(
      "--detach starts a new run, and run nightly-7 exists: collect it with `stet resume nightly-7`, or give a new --run-id",
    );
    const reuse = await stet("run", "eval.mjs", "--run-id", "nightly-7", "--reuse", "latest");
    expect(reuse.code).toBe(2);
    expect(reuse.stderr).toContain(
      "--run-id nightly-7 names an existing run that was started without --reuse",
    );
    const label = await stet("run", "eval.mjs", "--run-id", "nightly-7", "--label", "no value");
    expect(label.code).toBe(2);
    expect(`${detach.stderr}${reuse.stderr}`).not.toContain("data.jsonl");
    expect(requests()).toBe(0);
    expect(dumpDb(p.db)).toBe(before);
  });

  it("reads an existing run's dataset once (the resume's), not first as for a new run", async () => {
    const rows = DATA.split("\n").join(",\n");
    const counted = evalFile().replace(
      'dataset: "./data.jsonl",',
      `dataset: { *[Symbol.iterator]() { appendFileSync(new URL("./reads.log", import.meta.url), "read\\n"); yield* [${rows}]; } },`,
    );
    const { p, stet } = setup({
      "eval.mjs": `import { appendFileSync } from "node:fs";\n${counted}`,
    });
    const reads = () => readFileSync(join(p.dir, "reads.log"), "utf8").split("\n").length - 1;
    expect((await stet("run", "eval.mjs", "--run-id", "nightly-7")).code).toBe(0);
    expect(reads()).toBe(1);
    mock.reset();
    const again = await stet("run", "eval.mjs", "--run-id", "nightly-7");
    expect(again.code).toBe(0);
    expect(again.stdout).toContain("run nightly-7 is complete: nothing to execute");
    expect(reads()).toBe(2);
    const distributed = await stet("run", "eval.mjs", "--run-id", "nightly-7", "--distributed");
    expect(distributed.code).toBe(0);
    expect(reads()).toBe(3);
    expect(requests()).toBe(0);
  });

  it("refuses a malformed id before creating a store", async () => {
    const { p, stet } = setup();
    const refused = await stet("run", "eval.mjs", "--run-id", "no!");
    expect(refused.code).toBe(2);
    expect(existsSync(p.db)).toBe(false);
  });
});

describe("stet resume --rerun", () => {
  it("--rerun q3,q7 makes exactly two requests; both attempts stay in the history, the newer is the outcome", async () => {
    const { stet } = setup();
    const runId = JSON.parse((await stet("run", "eval.mjs", "--json")).stdout).runId as string;
    mock.reset();
    const rerun = await stet("resume", runId, "--rerun", "q3,q7", "--json");
    expect(rerun.code).toBe(0);
    expect(mock.counts()).toEqual({ "question 3": 1, "question 7": 1 });
    const report = JSON.parse(rerun.stdout);
    expect(report.plan).toMatchObject({ toExecute: 2, rerun: 2, preserved: 8 });
    expect(report.usage.spentNow.attempts).toBe(2);

    const history = await showJson(stet, runId, "--sample", "q3");
    expect(
      history.attempts.map((a: { attempt: number; outcome: boolean }) => [a.attempt, a.outcome]),
    ).toEqual([
      [1, false],
      [2, true],
    ]);
    const text = await stet("show", runId, "--sample", "q7");
    expect(text.stdout).toContain("epoch 1 attempt 1 ·");
    expect(text.stdout).toContain("epoch 1 attempt 2 (outcome)");

    // Done: a plain resume has nothing left, for those keys or any other.
    mock.reset();
    const plain = await stet("resume", runId);
    expect(plain.code).toBe(0);
    expect(plain.stdout).toContain("is complete: nothing to execute");
    expect(requests()).toBe(0);
    expect(await showJson(stet, runId)).toMatchObject({ counts: { scored: 10, remaining: 0 } });
  });

  it("replaces a re-run key's line in the run's --output Results JSONL", async () => {
    const { p, stet } = setup();
    const out = join(p.dir, "out/results.jsonl");
    const first = await stet("run", "eval.mjs", "--output", out, "--json");
    const runId = JSON.parse(first.stdout).runId as string;
    expect((await stet("resume", runId, "--rerun", "q3")).code).toBe(0);
    const lines = readFileSync(out, "utf8")
      .trim()
      .split("\n")
      .map(
        (l) => JSON.parse(l) as { test_case_id: string; metadata: { stet: { attempt: number } } },
      );
    expect(lines).toHaveLength(10);
    expect(new Set(lines.map((l) => l.test_case_id)).size).toBe(10);
    expect(lines.find((l) => l.test_case_id === "q3")?.metadata.stet.attempt).toBe(2);
    expect(lines.find((l) => l.test_case_id === "q4")?.metadata.stet.attempt).toBe(1);
  });

  it("--rerun-failed re-runs the keys scoring below 1", async () => {
    const { stet } = setup();
    const runId = JSON.parse((await stet("run", "eval.mjs", "--json")).stdout).runId as string;
    mock.reset();
    const rerun = await stet("resume", runId, "--rerun-failed");
    expect(rerun.code).toBe(0);
    expect(mock.counts()).toEqual(
      Object.fromEntries([1, 3, 5, 7, 9].map((n) => [`question ${n}`, 1])),
    );
  });

  it("refuses unknown sample ids with exit 2, naming them, and writes nothing", async () => {
    const { p, stet } = setup();
    const runId = JSON.parse((await stet("run", "eval.mjs", "--json")).stdout).runId as string;
    mock.reset();
    const before = dumpDb(p.db);
    const refused = await stet("resume", runId, "--rerun", "q3,nope,q99");
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain("does not have: nope, q99");
    expect((await stet("resume", runId, "--rerun", "q3,,q4")).code).toBe(2);
    expect(requests()).toBe(0);
    expect(dumpDb(p.db)).toBe(before);
  });
});
