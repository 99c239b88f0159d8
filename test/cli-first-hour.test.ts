import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { parse } from "csv-parse/sync";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { runCli } from "./helpers/cli.js";
import { evalProject, questions, rawAttempts } from "./helpers/eval-project.js";
import { solverCalls } from "./helpers/wait.js";

// The mistakes of a user's first hour with stet, through the real CLI: each gets a usage error
// (exit 2) naming the flag and the value before anything is spent, or simply works.

/** A counting function solver: each call appends to calls.log. `FAIL=q001` makes q001 throw. */
const EVAL = `
import { appendFileSync } from "node:fs";
import { defineEval, scorers } from "stet";
export default defineEval({
  name: "first-hour",
  dataset: "./data.jsonl",
  solver: async (sample, ctx) => {
    appendFileSync(new URL("./calls.log", import.meta.url), sample.id + "#" + ctx.epoch + "\\n");
    if (process.env.FAIL === sample.id) throw new Error("solver broke on " + sample.id);
    const text = typeof sample.input === "string" ? sample.input : sample.input.at(-1).content;
    return {
      output: text.replace("question", "answer"),
      usage: { inputTokens: 10, outputTokens: 3, costUsd: 0.25 },
    };
  },
  scorers: [scorers.exact(), scorers.includes()],
  concurrency: 2,
});
`;

const projects: { cleanup: () => void }[] = [];
afterEach(() => projects.splice(0).forEach((p) => p.cleanup()));
function project(files: Record<string, string> = {}) {
  const p = evalProject({ "eval.mjs": EVAL, "data.jsonl": questions(3), ...files });
  projects.push(p);
  return p;
}
const calls = solverCalls;
/** Every file under `dir` (recursively) with its bytes, to show a command changed nothing. */
function snapshot(dir: string): Record<string, string> {
  if (!existsSync(dir)) return {};
  const files: Record<string, string> = {};
  for (const entry of readdirSync(dir, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile()) continue;
    const path = join(entry.parentPath, entry.name);
    files[path] = readFileSync(path).toString("base64");
  }
  return files;
}
const runIdOf = (stdout: string) => stdout.match(/^run (r_\w+)/m)![1]!;

describe("bad flag values: exit 2 naming the flag and the value; the store untouched", () => {
  // One project with a finished run in its store, shared by the cases below.
  let p: ReturnType<typeof evalProject>;
  let runId: string;
  beforeAll(async () => {
    p = evalProject({ "eval.mjs": EVAL, "data.jsonl": questions(3) });
    const run = await runCli(["run", "eval.mjs"], { cwd: p.dir });
    expect(run.code, run.stderr).toBe(0);
    runId = runIdOf(run.stdout);
  });
  afterAll(() => p.cleanup());

  it.each([
    [["run", "eval.mjs", "--fail-under", ""], "--fail-under <score>", ""],
    [["run", "eval.mjs", "--fail-under", " "], "--fail-under <score>", " "],
    [["run", "eval.mjs", "--fail-under", "0x1"], "--fail-under <score>", "0x1"],
    [["run", "eval.mjs", "--fail-under", "1e0"], "--fail-under <score>", "1e0"],
    [["run", "eval.mjs", "--fail-under", "1.5"], "--fail-under <score>", "1.5"],
    [["resume", "RUN", "--fail-under", "0x0"], "--fail-under <score>", "0x0"],
    [["run", "eval.mjs", "--epochs", "0x2"], "--epochs <n>", "0x2"],
    [["run", "eval.mjs", "--concurrency", " "], "--concurrency <n>", " "],
    [["run", "eval.mjs", "--limit", "1e3"], "--limit <n>", "1e3"],
    [["run", "eval.mjs", "--timeout", ""], "--timeout <ms>", ""],
    [["cancel", "RUN", "--wait", "0x10"], "--wait <ms>", "0x10"],
    [["serve", "--port", "8e3"], "--port <n>", "8e3"],
  ])("%j", async (args, flag, value) => {
    const before = snapshot(p.dir);
    const result = await runCli(
      args.map((a) => (a === "RUN" ? runId : a)),
      { cwd: p.dir },
    );
    expect(result.code, result.stderr).toBe(2);
    expect(result.stderr).toContain(`option '${flag}' argument '${value}' is invalid`);
    expect(snapshot(p.dir)).toEqual(before);
  });

  it.each([
    [["--store", ""], {}, '--store "" is empty'],
    [["--store", "  "], {}, '--store "  " is empty'],
    [[], { STET_STORE: "" }, 'STET_STORE "" is empty'],
    [["--store", "mysql://root:hunter2@db/evals"], {}, "mysql://"],
    [["--store", "sqlite://runs.db"], {}, "sqlite://"],
    [[], { STET_STORE: "redis://cache:6379" }, "redis://"],
  ])("store %j %j: a usage error, no SQLite file of that name", async (flags, env, named) => {
    const before = snapshot(p.dir);
    for (const args of [
      ["run", "eval.mjs", ...flags],
      ["list", ...flags],
      ["export", runId, ...flags],
    ]) {
      const result = await runCli(args, { cwd: p.dir, env });
      expect(result.code, `${args.join(" ")}: ${result.stderr}`).toBe(2);
      expect(result.stderr).toContain(named);
      if (named.endsWith("://")) {
        expect(result.stderr).toContain("is not a supported store");
        expect(result.stderr).toContain("postgres:// or postgresql://");
      }
      expect(result.stderr).not.toContain("hunter2");
    }
    expect(snapshot(p.dir)).toEqual(before);
    expect(existsSync(join(p.dir, "mysql:"))).toBe(false);
    expect(calls(p.dir)).toHaveLength(3);
  });

  it("a bad --store refuses before the eval is even loaded, with no store created", async () => {
    const fresh = project({ "eval.mjs": "throw new Error('loaded');" });
    const result = await runCli(["run", "eval.mjs", "--store", "mysql://db/x"], {
      cwd: fresh.dir,
    });
    expect(result.code).toBe(2);
    expect(result.stderr).not.toContain("loaded");
    expect(readdirSync(fresh.dir).sort()).toEqual(["data.jsonl", "eval.mjs", "node_modules"]);
  });
});

describe("--output", () => {
  it("into folders that do not exist: they are created and the results written", async () => {
    const p = project();
    const run = await runCli(["run", "eval.mjs", "--output", "out/2026/results.jsonl"], {
      cwd: p.dir,
    });
    expect(run.code, run.stderr).toBe(0);
    const lines = readFileSync(join(p.dir, "out/2026/results.jsonl"), "utf8").trim().split("\n");
    expect(lines).toHaveLength(3);
    const resultSet = JSON.parse(readFileSync(join(p.dir, "out/2026/results.json"), "utf8"));
    expect(resultSet.results).toHaveLength(3);
    expect(calls(p.dir)).toHaveLength(3);
  });

  it.each([
    ["a directory", "out", () => "out: is a directory"],
    ["a directory with a slash", "out/", () => "out/: names a directory"],
    ["under a file", "notes.txt/results.jsonl", () => "a part of the path is a file"],
    ["whose ResultSet path is a directory", "res.jsonl", () => "its ResultSet res.json"],
  ])(
    "onto %s: refused before the run exists, 0 solver calls, no store",
    async (_, path, message) => {
      const p = project({ "notes.txt": "mine" });
      mkdirSync(join(p.dir, "out"));
      mkdirSync(join(p.dir, "res.json"));
      const result = await runCli(["run", "eval.mjs", "--output", path], { cwd: p.dir });
      expect(result.code, result.stderr).toBe(2);
      expect(result.stderr).toContain(`--output ${path}`);
      expect(result.stderr).toContain(message());
      expect(calls(p.dir)).toHaveLength(0);
      expect(existsSync(p.db)).toBe(false);
      expect(readFileSync(join(p.dir, "notes.txt"), "utf8")).toBe("mine");
    },
  );

  it("onto a directory beside an existing store: no run is added, the store byte for byte", async () => {
    const p = project();
    const first = await runCli(["run", "eval.mjs"], { cwd: p.dir });
    expect(first.code, first.stderr).toBe(0);
    mkdirSync(join(p.dir, "out"));
    const before = snapshot(join(p.dir, ".stet"));
    const result = await runCli(["run", "eval.mjs", "--output", "out"], { cwd: p.dir });
    expect(result.code).toBe(2);
    expect(calls(p.dir)).toHaveLength(3);
    expect(snapshot(join(p.dir, ".stet"))).toEqual(before);
    const list = await runCli(["list", "--json"], { cwd: p.dir });
    expect(JSON.parse(list.stdout)).toHaveLength(1);
  });

  it.skipIf(process.getuid?.() === 0)(
    "in a read-only folder: refused before the run exists (not as root, who may write anywhere)",
    async () => {
      const p = project();
      mkdirSync(join(p.dir, "locked"));
      chmodSync(join(p.dir, "locked"), 0o555);
      try {
        const result = await runCli(["run", "eval.mjs", "--output", "locked/r.jsonl"], {
          cwd: p.dir,
        });
        expect(result.code).toBe(2);
        expect(result.stderr).toContain("--output locked/r.jsonl: cannot be written");
        expect(calls(p.dir)).toHaveLength(0);
        expect(existsSync(p.db)).toBe(false);
      } finally {
        chmodSync(join(p.dir, "locked"), 0o755);
      }
    },
  );

  it("stet resume --output onto a directory: refused before anything executes, the store unchanged", async () => {
    const p = project();
    const run = await runCli(["run", "eval.mjs"], { cwd: p.dir, env: { FAIL: "q001" } });
    expect(run.code, run.stderr).toBe(3);
    const runId = runIdOf(run.stdout);
    mkdirSync(join(p.dir, "out"));
    const before = snapshot(join(p.dir, ".stet"));
    const refused = await runCli(["resume", runId, "--output", "out"], { cwd: p.dir });
    expect(refused.code, refused.stderr).toBe(2);
    expect(refused.stderr).toContain("--output out: is a directory");
    expect(calls(p.dir)).toHaveLength(3);
    expect(snapshot(join(p.dir, ".stet"))).toEqual(before);

    // Into a missing folder the same resume works, and executes only the errored key.
    const resumed = await runCli(["resume", runId, "--output", "new/r.jsonl"], { cwd: p.dir });
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(calls(p.dir)).toHaveLength(4);
    expect(readFileSync(join(p.dir, "new/r.jsonl"), "utf8").trim().split("\n")).toHaveLength(3);
  });

  it("stet resume refuses the run's recorded --output when it became a directory", async () => {
    const p = project();
    const run = await runCli(["run", "eval.mjs", "--output", "r.jsonl"], {
      cwd: p.dir,
      env: { FAIL: "q002" },
    });
    expect(run.code, run.stderr).toBe(3);
    const resultSet = join(p.dir, "r.json");
    expect(existsSync(resultSet)).toBe(true);
    rmSync(resultSet);
    mkdirSync(resultSet); // a folder where the run's ResultSet goes
    const before = snapshot(join(p.dir, ".stet"));
    const refused = await runCli(["resume", runIdOf(run.stdout)], { cwd: p.dir });
    expect(refused.code, refused.stderr).toBe(2);
    expect(refused.stderr).toContain("the run's --output");
    expect(refused.stderr).toContain(`its ResultSet ${resultSet}: is a directory`);
    expect(calls(p.dir)).toHaveLength(3);
    expect(snapshot(join(p.dir, ".stet"))).toEqual(before);
  });
});

describe("stet export", () => {
  it.each(["jsonl", "csv", "resultset"])(
    "-o into a folder that does not exist (%s): created and written",
    async (format) => {
      const p = project();
      const run = await runCli(["run", "eval.mjs"], { cwd: p.dir });
      const out = join("exports", format, "run.out");
      const result = await runCli(["export", runIdOf(run.stdout), "--format", format, "-o", out], {
        cwd: p.dir,
      });
      expect(result.code, result.stderr).toBe(0);
      expect(result.stderr).toBe("");
      expect(readFileSync(join(p.dir, out), "utf8").length).toBeGreaterThan(0);
      expect(readdirSync(join(p.dir, "exports", format))).toEqual(["run.out"]);
    },
  );

  it("-o onto a directory: a usage error naming it", async () => {
    const p = project();
    const run = await runCli(["run", "eval.mjs"], { cwd: p.dir });
    mkdirSync(join(p.dir, "exports"));
    const result = await runCli(["export", runIdOf(run.stdout), "-o", "exports"], { cwd: p.dir });
    expect(result.code).toBe(2);
    expect(result.stderr).toContain("-o exports: is a directory");
  });

  it("-o '' is a usage error, not stdout", async () => {
    const p = project();
    const run = await runCli(["run", "eval.mjs"], { cwd: p.dir });
    const result = await runCli(["export", runIdOf(run.stdout), "-o", ""], { cwd: p.dir });
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('-o "": is empty');
    expect(result.stdout).toBe("");
  });

  it("--format csv: the columns a spreadsheet expects, a column per scorer, nested values as JSON", async () => {
    const rows = [
      { id: "q000", input: "question 0", target: "answer 0" },
      { id: "q001", input: "question 1", target: "answer 1" },
      {
        id: "q002",
        input: [
          { role: "system", content: "be brief" },
          { role: "user", content: "question 2" },
        ],
        target: { any: ["answer 2", "two"] },
      },
      { id: "q003", input: 'question "3", with a comma' },
    ];
    const p = project({ "data.jsonl": rows.map((r) => JSON.stringify(r)).join("\n") });
    const run = await runCli(["run", "eval.mjs", "--epochs", "2"], {
      cwd: p.dir,
      env: { FAIL: "q001" },
    });
    expect(run.code, run.stderr).toBe(3);
    const csv = await runCli(["export", runIdOf(run.stdout), "--format", "csv"], { cwd: p.dir });
    expect(csv.code, csv.stderr).toBe(0);

    const [header, ...records] = parse(csv.stdout) as string[][];
    expect(header).toEqual([
      "sampleId",
      "epoch",
      "status",
      "input",
      "target",
      "output",
      "exact",
      "includes",
      "error",
      "inputTokens",
      "outputTokens",
      "costUsd",
      "startedAt",
      "completedAt",
      "durationMs",
      "retries",
      "cachedInputTokens",
      "cacheWriteTokens",
      "reasoningTokens",
      "reusedCostUsd",
      "limit",
      "limitValue",
      "limitUsed",
    ]);
    expect(records).toHaveLength(8);
    const byKey = new Map(
      (parse(csv.stdout, { columns: true }) as Record<string, string>[]).map((r) => [
        `${r.sampleId}#${r.epoch}`,
        r,
      ]),
    );
    expect([...byKey.keys()]).toEqual(
      ["q000", "q001", "q002", "q003"].flatMap((id) => [`${id}#1`, `${id}#2`]),
    );
    expect(byKey.get("q000#2")).toMatchObject({
      status: "scored",
      input: "question 0",
      target: "answer 0",
      output: "answer 0",
      exact: "1",
      includes: "1",
      error: "",
      inputTokens: "10",
      outputTokens: "3",
      costUsd: "0.25",
    });
    const errored = byKey.get("q001#1")!;
    expect(errored).toMatchObject({ status: "error", output: "", exact: "", includes: "" });
    expect(JSON.parse(errored.error!)).toMatchObject({
      type: "solver",
      message: expect.stringContaining("solver broke on q001"),
    });
    const chat = byKey.get("q002#1")!;
    expect(JSON.parse(chat.input!)).toEqual(rows[2]!.input);
    expect(JSON.parse(chat.target!)).toEqual(rows[2]!.target);
    expect(chat.output).toBe("answer 2");
    const quoted = byKey.get("q003#1")!;
    // No target: the scorers skip it, and a null score is an empty cell.
    expect(quoted).toMatchObject({ input: 'question "3", with a comma', target: "", exact: "" });
    for (const r of byKey.values()) {
      expect(new Date(r.completedAt!).getTime()).toBeGreaterThanOrEqual(
        new Date(r.startedAt!).getTime(),
      );
      expect(r.durationMs).toMatch(/^\d+$/);
    }
    expect(rawAttempts(p.db)).toHaveLength(8);
  });

  it("stet merge -o: into a missing folder it is created; onto a directory, a usage error", async () => {
    const p = project();
    const run = await runCli(["run", "eval.mjs", "--output", "r.json"], { cwd: p.dir });
    expect(run.code, run.stderr).toBe(0);
    const merged = await runCli(["merge", "r.json", "r.jsonl", "-o", "merged/all.json"], {
      cwd: p.dir,
    });
    expect(merged.code, merged.stderr).toBe(0);
    expect(JSON.parse(readFileSync(join(p.dir, "merged/all.json"), "utf8")).results).toHaveLength(
      3,
    );
    const refused = await runCli(["merge", "r.json", "-o", "merged"], { cwd: p.dir });
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain("-o merged: is a directory");
  });

  it("--format jsonl keeps its fields", async () => {
    const p = project();
    const run = await runCli(["run", "eval.mjs"], { cwd: p.dir });
    const out = await runCli(["export", runIdOf(run.stdout)], { cwd: p.dir });
    expect(Object.keys(JSON.parse(out.stdout.split("\n")[0]!))).toEqual([
      "runId",
      "sampleId",
      "epoch",
      "attempt",
      "status",
      "output",
      "scores",
      "usage",
      "retries",
      "startedAt",
      "completedAt",
      "durationMs",
      "error",
      "provenance",
    ]);
  });
});
