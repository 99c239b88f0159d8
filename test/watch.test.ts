import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { runCli, startCli, type CliProcess } from "./helpers/cli.js";
import { perTest } from "./helpers/eval-project.js";
import { startMockOpenAI, type MockOpenAI, type MockAction } from "./helpers/mock-openai.js";

/**
 * Issue 31 item 5: `stet run <eval> --watch`, through the real CLI against a local OpenAI-format
 * server counting requests. The reply is "the answer N"; `includes` scores 1 while the target is
 * "answer N". Every wait is on the child's output, never on time.
 */
const EVAL = `
import { defineEval, scorers, solvers } from "stet";
import { system } from "./lib/prompt.mjs";
export default defineEval({
  name: "watched",
  dataset: "./data.jsonl",
  solver: solvers.chat({ model: "m1", baseURL: process.env.MOCK_URL, system }),
  scorers: [scorers.includes()],
  concurrency: Number(process.env.CONCURRENCY ?? 4),
});
`;
const PROMPT = `export const system = "Answer.";\n`;

let mock: MockOpenAI;
/** Requests for these keys wait for `release` (set per test). */
let held = new Set<string>();
let release: Promise<void> = Promise.resolve();
let arrived: () => void = () => {};
beforeAll(async () => {
  mock = await startMockOpenAI({
    reply: ({ key }) => key.replace("question", "the answer"),
    respond: async ({ key }): Promise<MockAction | undefined> => {
      if (!held.has(key)) return undefined;
      arrived();
      await release;
      return undefined;
    },
  });
});
afterAll(() => mock.close());
afterEach(() => {
  mock.reset();
  held = new Set();
});

const { project } = perTest();

function rows(n: number, targets: Record<number, string> = {}): string {
  return Array.from({ length: n }, (_, i) =>
    JSON.stringify({ id: `q${i}`, input: `question ${i}`, target: targets[i] ?? `answer ${i}` }),
  ).join("\n");
}

/** Matches once `pattern` (a line's text) has appeared `n` times in the output. */
function nth(pattern: string, n: number): RegExp {
  return new RegExp(`(?:[\\s\\S]*?${pattern}){${n}}`);
}
const WATCHING = "watching \\d+ files for changes";

function watch(dir: string, env: NodeJS.ProcessEnv = {}): CliProcess {
  return startCli(["run", "eval.mjs", "--watch"], {
    cwd: dir,
    env: { MOCK_URL: mock.url, OPENAI_API_KEY: "sk-test", ...env },
  });
}

async function listed(dir: string): Promise<{ id: string; status: string; done: number }[]> {
  const list = await runCli(["list", "--json"], { cwd: dir });
  expect(list.code, list.stderr).toBe(0);
  return JSON.parse(list.stdout) as { id: string; status: string; done: number }[];
}

describe("stet run --watch", () => {
  it("re-runs on a dataset edit with one request, survives a syntax error, and stops on SIGINT with every run stored", async () => {
    const p = project({ "eval.mjs": EVAL, "lib/prompt.mjs": PROMPT, "data.jsonl": rows(5) });
    const cli = watch(p.dir);
    await cli.waitFor(nth(WATCHING, 1));
    // The eval file, its local import and its dataset.
    expect(cli.stdout()).toContain("watching 3 files for changes");
    expect(mock.requests).toHaveLength(5);

    // One row edited (its target): exactly one request, and the move is reported.
    writeFileSync(join(p.dir, "data.jsonl"), rows(5, { 2: "answer 9" }));
    await cli.waitFor(nth(WATCHING, 2));
    expect(mock.requests).toHaveLength(6);
    expect(mock.requests[5]!.key).toBe("question 2");
    expect(cli.stdout()).toContain("changed: data.jsonl");
    expect(cli.stdout()).toContain("changed  1 key executed · 4 reused");
    expect(cli.stdout()).toContain("includes: 1.0000 → 0.8000 (0 up, 1 down)");

    // A syntax error: said without a stack trace, and the watch goes on.
    writeFileSync(join(p.dir, "eval.mjs"), `${EVAL}\nexport const broken = ;\n`);
    await cli.waitFor(nth(WATCHING, 3));
    // Said on stderr, another pipe: it may come in after the line on stdout that follows it.
    await cli.waitFor(/failed to load eval file/, 30_000, "stderr");
    expect(cli.stderr()).toContain(join(p.dir, "eval.mjs"));
    expect(cli.stderr()).not.toMatch(/\n\s+at /);
    expect(mock.requests).toHaveLength(6);

    // Fixed: it runs again, reusing everything.
    writeFileSync(join(p.dir, "eval.mjs"), EVAL);
    await cli.waitFor(nth(WATCHING, 4));
    expect(cli.stdout()).toContain("changed  0 keys executed · 5 reused");
    expect(mock.requests).toHaveLength(6);

    // A local import changed: the eval's identity changed, so every key executes again.
    writeFileSync(join(p.dir, "lib/prompt.mjs"), `export const system = "Answer briefly.";\n`);
    await cli.waitFor(nth(WATCHING, 5));
    expect(cli.stdout()).toContain("changed: lib/prompt.mjs");
    expect(cli.stdout()).toContain("changed  5 keys executed · 0 reused");
    expect(mock.requests).toHaveLength(11);

    cli.child.kill("SIGINT");
    const done = await cli.done;
    expect(done.code, done.stderr).toBe(0);
    const runs = await listed(p.dir);
    expect(runs).toHaveLength(4);
    for (const run of runs) expect(run).toMatchObject({ status: "completed", done: 5 });
  });

  it("a SIGINT during an iteration leaves its run interrupted and resumable", async () => {
    const p = project({ "eval.mjs": EVAL, "lib/prompt.mjs": PROMPT, "data.jsonl": rows(3) });
    const cli = watch(p.dir, { CONCURRENCY: "1" });
    await cli.waitFor(nth(WATCHING, 1));
    expect(mock.requests).toHaveLength(3);

    // Two rows changed; the first request of the iteration is held until the signal is sent.
    held = new Set(["question 3", "question 4"]);
    let free: () => void = () => {};
    release = new Promise((resolve) => (free = resolve));
    const reached = new Promise<void>((resolve) => (arrived = resolve));
    writeFileSync(join(p.dir, "data.jsonl"), rows(5));
    await reached;
    cli.child.kill("SIGINT");
    await new Promise<void>((resolve) => {
      const seen = () => cli.stderr().includes("finishing in-flight samples") && resolve();
      cli.child.stderr!.on("data", seen);
      seen();
    });
    free();
    const done = await cli.done;
    expect(done.code).toBe(130);
    expect(mock.requests).toHaveLength(4);

    const runs = await listed(p.dir);
    expect(runs).toHaveLength(2);
    const interrupted = runs.find((r) => r.status === "interrupted");
    expect(interrupted).toMatchObject({ done: 4 });
    const resumed = await runCli(["resume", interrupted!.id], {
      cwd: p.dir,
      env: { MOCK_URL: mock.url, OPENAI_API_KEY: "sk-test" },
    });
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(mock.requests).toHaveLength(5);
  });
});
