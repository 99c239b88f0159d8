import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startCli, type CliResult } from "./helpers/cli.js";
import { evalProject, perTest, questions } from "./helpers/eval-project.js";
import { startServe } from "./helpers/serve.js";

// An eval module that never finishes loading (a top-level await that never settles) is refused
// once --load-timeout passed: exit 1, a message naming the file, nothing created. Without it, a
// module that holds nothing else made Node exit 13 with no message ("unsettled top-level
// await"), and one that keeps the event loop alive (a timer) hung the command for ever.

const NEVER = "await new Promise(() => {});\nexport default {};\n";
const ALIVE = "setInterval(() => {}, 1_000);\nawait new Promise(() => {});\nexport default {};\n";
const GOOD = `
import { defineEval, scorers } from "stet";
export default defineEval({
  name: "good",
  dataset: "./three.jsonl",
  solver: (sample) => sample.target,
  scorers: [scorers.exact()],
});
`;

/** Only a guard against a hang: a CLI that has not exited after this is killed. */
const HANG_GUARD_MS = 40_000;

/** `stet <args>`, killed (code null) if it has not exited within the hang guard. */
async function runGuarded(args: string[], cwd: string): Promise<CliResult> {
  const proc = startCli(args, { cwd });
  const guard = setTimeout(() => proc.child.kill("SIGKILL"), HANG_GUARD_MS);
  try {
    return await proc.done;
  } finally {
    clearTimeout(guard);
  }
}

function expectRefused(result: CliResult, file: string) {
  expect(result.signal, "the command hung").toBeNull();
  expect(result.code, result.stderr).toBe(1);
  expect(result.stderr).toContain(
    `stet: eval file ${file} did not finish loading within 2000 ms: its top-level code never settled`,
  );
  expect(result.stderr).not.toMatch(/^\s+at /m);
}

const { project } = perTest();

describe("stet run", () => {
  it.each([
    ["never.mjs", NEVER],
    ["alive.mjs", ALIVE],
    ["alive.ts", ALIVE],
  ])("refuses %s with --load-timeout 2000: exit 1, no store created", async (name, text) => {
    const p = project({ [name]: text });
    const result = await runGuarded(["run", name, "--load-timeout", "2000"], p.dir);
    expectRefused(result, join(p.dir, name));
    expect(existsSync(join(p.dir, ".stet"))).toBe(false);
  });
});

describe("commands that load a run's eval", () => {
  let p: ReturnType<typeof evalProject>;
  let runId: string;
  const storeBytes = () =>
    new Map(
      readdirSync(join(p.dir, ".stet")).map((n) => [n, readFileSync(join(p.dir, ".stet", n))]),
    );
  beforeAll(async () => {
    p = evalProject({ "three.jsonl": questions(3), "good.mjs": GOOD, "alive.mjs": ALIVE });
    const first = await runGuarded(["run", "good.mjs"], p.dir);
    expect(first.code, first.stderr).toBe(0);
    runId = /run (r_\w+)/.exec(first.stdout)![1]!;
  }, 60_000);
  afterAll(() => p.cleanup());

  it.each([
    ["resume", () => ["resume", runId, "--eval", "alive.mjs", "--load-timeout", "2000"]],
    ["rescore", () => ["rescore", runId, "--eval", "alive.mjs", "--load-timeout", "2000"]],
    ["run --resume", () => ["run", "alive.mjs", "--resume", runId, "--load-timeout", "2000"]],
  ])("stet %s with a module that never loads: exit 1, the store unchanged", async (_, args) => {
    const before = storeBytes();
    const result = await runGuarded(args(), p.dir);
    expectRefused(result, join(p.dir, "alive.mjs"));
    expect(storeBytes()).toEqual(before);
  });
});

describe("a directory of evals", () => {
  it("stet worker --evals: the module that never loads is skipped, the worker goes on", async () => {
    const p = project({ "evals/alive.mjs": ALIVE });
    const result = await runGuarded(
      ["worker", "--evals", "evals", "--load-timeout", "2000"],
      p.dir,
    );
    expect(result.signal, "the worker hung").toBeNull();
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toContain("no open distributed run to work on");
  });

  it("stet serve --evals: the module that never loads is skipped with why, the server listens", async () => {
    const p = project({
      "evals/alive.mjs": ALIVE,
      "evals/good.mjs": GOOD,
      "evals/three.jsonl": questions(3),
    });
    const server = await startServe([
      "--store",
      join(p.dir, "stet.db"),
      "--evals",
      join(p.dir, "evals"),
      "--load-timeout",
      "2000",
    ]);
    try {
      const alive = join(p.dir, "evals/alive.mjs");
      const body = (await (await server.fetch("/api/evals")).json()) as {
        evals: { name: string }[];
        problems: { file: string; message: string }[];
      };
      expect(body.evals.map((e) => e.name)).toEqual(["good"]);
      expect(body.problems).toEqual([
        { file: alive, message: expect.stringContaining("did not finish loading within 2000 ms") },
      ]);
      expect(server.proc.stderr()).toContain(
        `evals: skipped ${alive}: eval file ${alive} did not finish loading within 2000 ms`,
      );
    } finally {
      server.proc.child.kill("SIGTERM");
      await server.proc.done;
    }
  });
});
