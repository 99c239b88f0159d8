import { readFileSync, renameSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli, startCli } from "./helpers/cli.js";
import { perTest, questions } from "./helpers/eval-project.js";
import { startMockOpenAI, type MockOpenAI } from "./helpers/mock-openai.js";

/**
 * Scores apart from outputs, through the real CLI against a local OpenAI-compatible server that
 * counts requests: `stet rescore` makes no solver calls and leaves every stored output, usage and
 * timestamp as it was; a scorer error is scored again by resume, not solved again.
 */

let mock: MockOpenAI;
beforeAll(async () => {
  // "question i" is answered "answer i", except every third, answered wrong.
  mock = await startMockOpenAI({
    reply: ({ key }) => {
      const i = Number(key.split(" ")[1]);
      return i % 3 === 0 ? `nope ${i}` : `answer ${i}`;
    },
  });
});
afterAll(() => mock.close());
const { project } = perTest();

/** An eval file whose scorers are the given source (an array expression). */
function evalFile(scorersSource: string, extra = ""): string {
  return `import { defineEval, scorers, solvers } from "stet";
${extra}
export default defineEval({
  name: "rescore-me",
  dataset: "./data.jsonl",
  solver: solvers.chat({ model: "gpt-4o-mini", baseURL: ${JSON.stringify(mock.url)}, apiKey: "sk-test" }),
  scorers: ${scorersSource},
  concurrency: 4,
});
`;
}

interface Row {
  sampleId: string;
  output: unknown;
  usage: unknown;
  startedAt: string;
  completedAt: string;
}

/** The solver side of every attempt, as `stet export --format jsonl` prints it. */
async function solverSide(dir: string, runId: string): Promise<string> {
  const exported = await runCli(["export", runId, "--format", "jsonl"], { cwd: dir });
  expect(exported.code, exported.stderr).toBe(0);
  const rows = exported.stdout
    .trim()
    .split("\n")
    .map((line) => JSON.parse(line) as Row);
  return JSON.stringify(
    rows.map(({ sampleId, output, usage, startedAt, completedAt }) => ({
      sampleId,
      output,
      usage,
      startedAt,
      completedAt,
    })),
  );
}

async function show(dir: string, runId: string) {
  const shown = await runCli(["show", runId, "--json"], { cwd: dir });
  expect(shown.code, shown.stderr).toBe(0);
  return JSON.parse(shown.stdout) as {
    status: string;
    config: { scorers: string[]; rescore?: unknown };
    metrics: { scorer: string; mean: number | null; samples: number }[];
    counts: { scored: number; errored: number };
  };
}

describe("stet rescore", () => {
  it("scores stored outputs with an added scorer: 0 model requests, outputs/usage/timestamps byte-identical", async () => {
    const p = project({
      "data.jsonl": questions(9),
      "eval.mjs": evalFile(`[scorers.exact(), scorers.includes({ substring: "zzz" })]`),
    });
    mock.reset();
    const run = await runCli(["run", "eval.mjs", "--json"], { cwd: p.dir });
    expect(run.code, run.stderr).toBe(0);
    const runId = (JSON.parse(run.stdout) as { runId: string }).runId;
    expect(mock.requests).toHaveLength(9);
    const before = await solverSide(p.dir, runId);

    // The eval now has a new scorer, and "includes" is gone.
    writeFileSync(
      join(p.dir, "eval.mjs"),
      evalFile(`[scorers.exact(), scorers.regex(/answer \\d+/)]`),
    );
    mock.reset();
    // The rescore scores the run's stored samples and never reads the dataset: here it is gone.
    renameSync(join(p.dir, "data.jsonl"), join(p.dir, "data.moved"));
    const rescored = await runCli(["rescore", runId, "--json"], { cwd: p.dir });
    renameSync(join(p.dir, "data.moved"), join(p.dir, "data.jsonl"));
    expect(rescored.code, rescored.stderr).toBe(0);
    expect(mock.requests).toHaveLength(0);
    expect(rescored.stderr).toContain("9 stored output(s) to score with exact, regex");
    const report = JSON.parse(rescored.stdout) as {
      rescored: number;
      executed: number;
    };
    expect(report).toMatchObject({ rescored: 9, executed: 0 });

    expect(await solverSide(p.dir, runId)).toBe(before);
    const shown = await show(p.dir, runId);
    expect(shown.config.scorers).toEqual(["exact", "regex"]);
    expect(shown.config.rescore).toBeUndefined();
    expect(shown.metrics.map((m) => [m.scorer, m.mean, m.samples])).toEqual([
      ["exact", 6 / 9, 9],
      ["regex", 6 / 9, 9],
    ]);

    // The removed scorer's scores stay in the sample's history.
    const sample = await runCli(["show", runId, "--sample", "q001", "--json"], { cwd: p.dir });
    expect(sample.code, sample.stderr).toBe(0);
    const [attempt] = (
      JSON.parse(sample.stdout) as {
        attempts: {
          scores: { scorer: string }[];
          asCommitted: { scores: { scorer: string }[] };
          scorings: { rescored: string[]; scorerConfig: Record<string, unknown> }[];
        }[];
      }
    ).attempts;
    expect(attempt!.scores.map((s) => s.scorer)).toEqual(["exact", "regex"]);
    expect(attempt!.asCommitted.scores.map((s) => s.scorer)).toEqual(["exact", "includes"]);
    expect(attempt!.scorings).toMatchObject([
      { rescored: ["exact", "regex"], scorerConfig: { regex: { kind: "regex" } } },
    ]);
    // The run now resumes with this eval: the rescore recorded its scorers in the run's identity.
    const resumed = await runCli(["resume", runId], { cwd: p.dir });
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(mock.requests).toHaveLength(0);
  });

  it("a scorer that throws once: resume makes 0 model requests and the key ends scored", async () => {
    const p = project({
      "data.jsonl": questions(4),
      "eval.mjs": evalFile(
        `[scorers.exact(), { name: "flaky", score: ({ sample }) => { if (sample.id === "q002" && !existsSync(new URL("./fixed", import.meta.url))) throw new Error("flaky broke"); return 1; } }]`,
        `import { existsSync } from "node:fs";`,
      ),
    });
    mock.reset();
    const run = await runCli(["run", "eval.mjs"], { cwd: p.dir });
    expect(run.code).toBe(3);
    expect(run.stdout).toMatch(/scorer 1/);
    const runId = /run (r_\w+)/.exec(run.stdout)![1]!;
    expect(mock.requests).toHaveLength(4);
    const before = await solverSide(p.dir, runId);

    writeFileSync(join(p.dir, "fixed"), "");
    mock.reset();
    const resumed = await runCli(["resume", runId], { cwd: p.dir });
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(resumed.stdout).toContain("1 scorer error(s) to score again");
    expect(mock.requests).toHaveLength(0);
    const shown = await show(p.dir, runId);
    expect(shown.status).toBe("completed");
    expect(shown.counts).toMatchObject({ scored: 4, errored: 0 });
    expect(await solverSide(p.dir, runId)).toBe(before);
  });

  it("refuses an unknown scorer name and an unknown run, changing nothing", async () => {
    const p = project({ "data.jsonl": questions(2), "eval.mjs": evalFile(`[scorers.exact()]`) });
    const run = await runCli(["run", "eval.mjs", "--json"], { cwd: p.dir });
    const runId = (JSON.parse(run.stdout) as { runId: string }).runId;
    const db = readFileSync(p.db);
    const bad = await runCli(["rescore", runId, "--scorer", "nope"], { cwd: p.dir });
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('the eval has no scorer named "nope" (it has: exact)');
    const ghost = await runCli(["rescore", "r_ghost"], { cwd: p.dir });
    expect(ghost.code).toBe(1);
    expect(ghost.stderr).toContain("r_ghost");
    expect(readFileSync(p.db).equals(db)).toBe(true);
  });

  /** A finished 40-sample run whose eval now adds a slow scorer that logs every sample it scores. */
  async function slowRescore() {
    const p = project({
      "data.jsonl": questions(40),
      "eval.mjs": evalFile(`[scorers.exact()]`),
    });
    const run = await runCli(["run", "eval.mjs", "--json"], { cwd: p.dir });
    const runId = (JSON.parse(run.stdout) as { runId: string }).runId;
    // The new scorer is slow and logs every sample it scores.
    const log = join(p.dir, "scored.log");
    writeFileSync(
      join(p.dir, "eval.mjs"),
      evalFile(
        `[scorers.exact(), { name: "slow", score: async ({ sample }) => { appendFileSync(${JSON.stringify(log)}, sample.id + "\\n"); await new Promise((r) => setTimeout(r, 100)); return 1; } }]`,
        `import { appendFileSync } from "node:fs";`,
      ),
    );
    writeFileSync(log, "");
    return { p, runId, log };
  }

  it("a rescore killed with SIGKILL goes on with only the outputs it had not scored", async () => {
    const { p, runId, log } = await slowRescore();
    const first = startCli(["rescore", runId], { cwd: p.dir });
    await waitForLines(log, 12);
    first.child.kill("SIGKILL");
    await first.done;
    const scoredFirst = new Set(await committedSlow(p.dir, runId));
    expect(scoredFirst.size).toBeGreaterThan(0);
    expect(scoredFirst.size).toBeLessThan(40);

    writeFileSync(log, "");
    const second = await runCli(["rescore", runId], { cwd: p.dir });
    expect(second.code, second.stderr).toBe(0);
    expect(second.stdout).toContain("going on with the rescore");
    const again = readFileSync(log, "utf8").trim().split("\n");
    // Only what the killed rescore had not committed is scored again (at most its in-flight ones).
    for (const id of again) expect(scoredFirst.has(id)).toBe(false);
    expect(again.length).toBe(40 - scoredFirst.size);
    const shown = await show(p.dir, runId);
    expect(shown.metrics.find((m) => m.scorer === "slow")?.samples).toBe(40);
    expect(shown.config.rescore).toBeUndefined();
  });

  it("a rescore stopped by SIGINT: its step summary gives the rescore command, not resume", async () => {
    const { p, runId, log } = await slowRescore();
    const summaryFile = join(p.dir, "summary.md");
    const stopped = startCli(["rescore", runId, "--scorer", "slow"], {
      cwd: p.dir,
      env: { GITHUB_STEP_SUMMARY: summaryFile },
    });
    await waitForLines(log, 8);
    stopped.child.kill("SIGINT");
    const result = await stopped.done;
    expect(result.code, result.stderr).toBe(130);
    expect(result.stderr).toContain(`go on with: stet rescore ${runId} --scorer slow`);
    const summary = readFileSync(summaryFile, "utf8");
    expect(summary).toContain(`### stet run \`${runId}\``);
    // The run stays completed (every key has its outcome); the rescore is what is unfinished.
    expect(summary).toContain("**Status:** completed");
    expect(summary).toContain("Incomplete; finish it with:");
    expect(summary).toContain(`\`\`\`sh\nstet rescore ${runId} --scorer slow\n\`\`\``);
    expect(summary).not.toContain("stet resume");
  });
});

async function waitForLines(file: string, n: number): Promise<void> {
  const deadline = Date.now() + 20_000;
  while (readFileSync(file, "utf8").trim().split("\n").filter(Boolean).length < n) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${n} lines in ${file}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** Sample ids whose current scores include the "slow" scorer. */
async function committedSlow(dir: string, runId: string): Promise<string[]> {
  const exported = await runCli(["export", runId, "--format", "jsonl"], { cwd: dir });
  return exported.stdout
    .trim()
    .split("\n")
    .map((line) => JSON.parse(line) as { sampleId: string; scores: { scorer: string }[] })
    .filter((row) => row.scores.some((s) => s.scorer === "slow"))
    .map((row) => row.sampleId);
}
