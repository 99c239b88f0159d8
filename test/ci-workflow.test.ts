import { spawn } from "node:child_process";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { STET_BIN } from "./helpers/cli.js";
import { evalProject } from "./helpers/eval-project.js";
import { startMockOpenAI, type MockOpenAI } from "./helpers/mock-openai.js";

// The stet commands of docs/ci-baselines.md's GitHub Actions workflow, run as its steps would on
// a push to main and on pull requests (a simulated Actions environment), against a local
// OpenAI-format server: the documented workflow works as documented.

const PAGE = readFileSync(
  fileURLToPath(new URL("../docs/ci-baselines.md", import.meta.url)),
  "utf8",
);
/** The workflow's first YAML block (GitHub Actions). */
const WORKFLOW = /```yaml\n([\s\S]*?)```/.exec(PAGE)![1]!.split("\n");
/** The stet subcommands the workflow's steps call, in order. */
const STET_COMMANDS = WORKFLOW.filter((l) => l.includes("npx stet ")).map(
  (l) => /npx stet (\w+)/.exec(l)![1],
);

/**
 * The whole script of the step that calls `stet <command>` (a `run: |` block, or a one-line
 * `run:`), with `npx stet` as the built bin.
 */
function step(command: string): string {
  const at = WORKFLOW.findIndex((l) => l.includes(`npx stet ${command} `));
  const asBin = (text: string) => text.replace(/npx stet /g, 'node "$STET_BIN" ');
  const line = WORKFLOW[at]!.trim();
  if (line.startsWith("run: ")) return asBin(line.slice("run: ".length));
  let start = at;
  while (!/^\s*run: \|/.test(WORKFLOW[start]!)) start -= 1;
  const indent = /^\s*/.exec(WORKFLOW[start + 1]!)![0].length;
  const script: string[] = [];
  for (const l of WORKFLOW.slice(start + 1)) {
    if (l.trim() !== "" && /^\s*/.exec(l)![0].length < indent) break;
    script.push(l.slice(indent));
  }
  return asBin(script.join("\n"));
}

const EVAL = `import { defineEval, scorers, solvers } from "stet";
export default defineEval({
  name: "qa",
  dataset: Array.from({ length: 100 }, (_, i) => ({ id: "q" + String(i).padStart(3, "0"), input: "question " + i, target: "question " + i })),
  solver: solvers.chat({ model: "gpt-4o-mini" }),
  scorers: [scorers.exact()],
});
`;

let mock: MockOpenAI;
let project: ReturnType<typeof evalProject>;
/** The user messages the model answers wrong. */
const wrong = new Set<string>();

beforeAll(async () => {
  mock = await startMockOpenAI({ reply: ({ key }) => (wrong.has(key) ? "nope" : key) });
  project = evalProject({ "evals/qa.ts": EVAL });
});
afterAll(async () => {
  await mock.close();
  project.cleanup();
});

/** One workflow line in bash, in the project, with the job's environment. */
function sh(
  line: string,
  env: Record<string, string>,
): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve) => {
    const child = spawn("bash", ["-ec", line], {
      cwd: project.dir,
      env: {
        ...process.env,
        NO_COLOR: "1",
        STET_BIN,
        STET_STORE: ".stet/stet.db",
        OPENAI_BASE_URL: mock.url,
        OPENAI_API_KEY: "sk-test-ci-key",
        GITHUB_ACTIONS: "true",
        GITHUB_SERVER_URL: "https://github.com",
        GITHUB_REPOSITORY: "acme/app",
        GITHUB_STEP_SUMMARY: "",
        ...env,
      },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let out = "";
    child.stdout.on("data", (d: Buffer) => (out += d.toString()));
    child.stderr.on("data", (d: Buffer) => (out += d.toString()));
    child.on("close", (code) => resolve({ code, out }));
  });
}

function pushToMain(runId: string) {
  return {
    RUN: runId,
    GITHUB_REF: "refs/heads/main",
    GITHUB_REF_NAME: "main",
    GITHUB_RUN_ID: runId,
  };
}

function pullRequest(runId: string, output: string) {
  return {
    RUN: runId,
    GITHUB_REF: "refs/pull/5/merge",
    GITHUB_REF_NAME: "5/merge",
    GITHUB_HEAD_REF: "feature/prompt",
    GITHUB_RUN_ID: runId,
    GITHUB_OUTPUT: output,
  };
}

describe("docs/ci-baselines.md's GitHub Actions workflow", () => {
  it("has the steps the test runs", () => {
    expect(STET_COMMANDS).toEqual(["run", "diff", "export"]);
  });

  it("records main's run, then compares a pull request with it and reports a regression", async () => {
    const main = pushToMain("ci-1-1");
    expect((await sh(step("run"), main)).code).toBe(0);
    expect((await sh(step("export"), main)).code).toBe(0);
    expect(mock.requests).toHaveLength(100);

    const output = join(project.dir, "github-output");
    writeFileSync(output, "");
    const same = pullRequest("ci-2-1", output);
    expect((await sh(step("run"), same)).code).toBe(0);
    const compared = await sh(step("diff"), same);
    expect(compared.code, compared.out).toBe(0);
    expect(readFileSync(output, "utf8")).toBe("code=0\n");
    const report = readFileSync(join(project.dir, "stet-diff.md"), "utf8");
    expect(report).toMatch(/^### stet diff · qa · no significant regression/);
    expect(report).toContain("compared with **baseline** `ci-1-1` (branch=main");
    expect(report).toContain("pr=5");
    expect(report).toContain("suite=qa");
    expect((await sh(step("export"), same)).code).toBe(0);
    expect(existsSync(join(project.dir, "stet-report.html"))).toBe(true);

    for (let i = 0; i < 10; i++) wrong.add(`question ${i * 10 + 1}`);
    writeFileSync(output, "");
    const worse = pullRequest("ci-3-1", output);
    expect((await sh(step("run"), worse)).code).toBe(0);
    expect((await sh(step("diff"), worse)).code).toBe(0);
    expect(readFileSync(output, "utf8")).toBe("code=4\n");
    const regressed = readFileSync(join(project.dir, "stet-diff.md"), "utf8");
    expect(regressed).toMatch(/^### stet diff · qa · regression/);
    expect(regressed).toContain("| exact | ❌ regressed | 1.000 | 0.900 | -0.100 |");
    expect(regressed).toContain("| `q001` | question 1 | question 1 | question 1 | nope |");
    // Three runs of 100 samples: every model call made once.
    expect(mock.requests).toHaveLength(300);
  });
});
