import { execFile, spawn } from "node:child_process";
import { mkdirSync, readFileSync, symlinkSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli, STET_BIN } from "./helpers/cli.js";
import { perTest, rawAttempts } from "./helpers/eval-project.js";
import { startMockOpenAI, type MockOpenAI } from "./helpers/mock-openai.js";

// `stet init` in a fresh project whose node_modules has stet (linked to this repo, as
// `npm i stet` would put it), then the command it prints, run as printed.
const REPO = fileURLToPath(new URL("..", import.meta.url));
const { project } = perTest();

/** The scaffold's questions and the answers the mock model gives them. */
const ANSWERS: Record<string, string> = {
  "What is the capital of France?": "Paris.",
  "What is 17 + 25? Answer with a number only.": "42",
  "Which planet is closest to the Sun?": "Mercury",
  "What is the chemical formula of water?": "H2O",
  "Who wrote 'Pride and Prejudice'?": "Charles Dickens",
};

let mock: MockOpenAI;
beforeAll(async () => {
  mock = await startMockOpenAI({ reply: ({ key }) => ANSWERS[key] ?? "no idea" });
});
afterAll(() => mock.close());

/** A fresh project with `node_modules/stet` and its bin, as an install leaves them. */
function freshProject(files: Record<string, string> = {}) {
  const p = project(files);
  mkdirSync(join(p.dir, "node_modules/.bin"));
  symlinkSync(STET_BIN, join(p.dir, "node_modules/.bin/stet"));
  return p;
}

/** A shell command as a user types it, in `cwd`. */
function sh(command: string, cwd: string, env: NodeJS.ProcessEnv) {
  return new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
    const child = spawn("sh", ["-c", command], { cwd, env: { ...process.env, ...env } });
    let stdout = "";
    let stderr = "";
    child.stdout.setEncoding("utf8").on("data", (d: string) => (stdout += d));
    child.stderr.setEncoding("utf8").on("data", (d: string) => (stderr += d));
    child.on("close", (code) => resolve({ code, stdout, stderr }));
  });
}

describe("stet init", () => {
  it("scaffolds a chat eval whose printed command runs to completion against an OpenAI-compatible server", async () => {
    const p = freshProject();
    const init = await runCli(["init"], { cwd: p.dir });
    expect(init.code, init.stderr).toBe(0);
    expect(init.stdout).toContain("wrote evals/qa.ts, evals/qa.jsonl, package.json");
    const command = /^ {2}(.+)$/m.exec(init.stdout)![1]!;
    expect(command).toBe("npm run eval");
    const pkg = JSON.parse(readFileSync(join(p.dir, "package.json"), "utf8")) as {
      scripts: Record<string, string>;
    };
    expect(pkg.scripts).toEqual({ eval: "stet run evals/qa.ts" });

    const before = mock.requests.length;
    const run = await sh(command, p.dir, {
      OPENAI_BASE_URL: mock.url,
      OPENAI_API_KEY: "sk-test",
      NO_COLOR: "1",
    });
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toMatch(/run r_\w+ · qa · 5 keys/);
    expect(run.stdout).toMatch(/5 total · 5 scored · 0 errored/);
    expect(mock.requests.length - before).toBe(5);
    // "Paris." includes Paris but is not exactly it; the wrong author is neither.
    expect(run.stdout).toMatch(/includes\s+0\.8000/);
    expect(run.stdout).toMatch(/exact\s+0\.6000/);
    expect(rawAttempts(p.db)).toHaveLength(5);
  });

  it("refuses to overwrite a file it would write, naming it, and writes nothing", async () => {
    const p = freshProject({ "evals/qa.jsonl": '{"input":"mine"}\n' });
    const refused = await runCli(["init"], { cwd: p.dir });
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain(`not overwriting ${join(p.dir, "evals/qa.jsonl")}`);
    expect(refused.stderr).not.toMatch(/\n\s+at /);
    expect(readFileSync(join(p.dir, "evals/qa.jsonl"), "utf8")).toBe('{"input":"mine"}\n');
    expect(() => readFileSync(join(p.dir, "evals/qa.ts"))).toThrow();
    expect(() => readFileSync(join(p.dir, "package.json"))).toThrow();
  });

  it("keeps a project's own package.json and its eval script, adding stet:qa beside them", async () => {
    const original = { name: "mine", version: "1.0.0", scripts: { eval: "python eval.py" } };
    const p = freshProject({ "package.json": JSON.stringify(original, null, 4) });
    const init = await runCli(["init", "--json"], { cwd: p.dir });
    expect(init.code, init.stderr).toBe(0);
    expect(JSON.parse(init.stdout)).toMatchObject({ command: "npm run stet:qa" });
    const pkg = JSON.parse(readFileSync(join(p.dir, "package.json"), "utf8")) as unknown;
    expect(pkg).toEqual({
      ...original,
      scripts: { eval: "python eval.py", "stet:qa": "stet run evals/qa.ts" },
    });
    const broken = freshProject({ "package.json": "{ not json" });
    const refused = await runCli(["init"], { cwd: broken.dir });
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain(`${join(broken.dir, "package.json")} is not valid JSON`);
    expect(() => readFileSync(join(broken.dir, "evals/qa.ts"))).toThrow();
  });

  it("writes the bundled examples, which run as printed (arithmetic: no key, no network)", async () => {
    const p = freshProject();
    const init = await runCli(["init", "--example", "arithmetic"], { cwd: p.dir });
    expect(init.code, init.stderr).toBe(0);
    const command = /^ {2}(.+)$/m.exec(init.stdout)![1]!;
    expect(command).toBe("npx stet run examples/arithmetic/eval.ts");
    const run = await runCli(command.split(" ").slice(2), { cwd: p.dir });
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toMatch(/30 total · 30 scored · 0 errored/);

    // The agent example stands alone too: its dataset is in its own folder.
    const agent = await runCli(["init", "--example", "agent"], { cwd: p.dir });
    expect(agent.code, agent.stderr).toBe(0);
    const before = mock.requests.length;
    const ran = await runCli(["run", "examples/agent/eval.ts"], {
      cwd: p.dir,
      env: { OPENAI_BASE_URL: mock.url, OPENAI_API_KEY: "sk-test" },
    });
    expect(ran.code === 0 || ran.code === 3, ran.stderr).toBe(true);
    expect(mock.requests.length - before).toBeGreaterThanOrEqual(5);

    const unknown = await runCli(["init", "--example", "nope"], { cwd: p.dir });
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain(
      'no example named "nope": the examples are agent, arithmetic, chat, humaneval',
    );
  });

  it("ships the examples, the built CLI and the manual in the npm package", async () => {
    const { stdout } = await promisify(execFile)(
      "npm",
      ["pack", "--dry-run", "--json", "--ignore-scripts"],
      { cwd: REPO },
    );
    const [pack] = JSON.parse(stdout) as [{ files: { path: string }[] }];
    const paths = pack.files.map((f) => f.path);
    for (const path of [
      "bin/stet.js",
      "dist/cli/bin.js",
      "dist/index.d.ts",
      "examples/arithmetic/eval.ts",
      "examples/chat/questions.jsonl",
      "examples/agent/questions.jsonl",
      "examples/humaneval/humaneval.jsonl",
      "examples/humaneval/README.md",
      "README.md",
    ])
      expect(paths).toContain(path);
    // The README's links into docs/ resolve in the installed package too.
    const readme = readFileSync(join(REPO, "README.md"), "utf8");
    const docs = [...readme.matchAll(/\]\((docs\/[^)#]+)/g)].map((m) => m[1]!);
    expect(docs.length).toBeGreaterThan(10);
    for (const path of docs) expect(paths).toContain(path);
    expect(paths.some((path) => path.startsWith("test/") || path.startsWith("src/"))).toBe(false);
  });
});
