import { spawn } from "node:child_process";
import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Readable } from "node:stream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli, startCli, STET_BIN } from "./helpers/cli.js";
import { perTest } from "./helpers/eval-project.js";
import { startMockOpenAI, type MockOpenAI } from "./helpers/mock-openai.js";
import { SKIP_SANDBOX } from "./helpers/sandbox.js";

// The sandbox through the real CLI: a missing backend refuses the run before any model call, a
// suite's code graders run, and SIGKILL of stet takes every sandboxed process with it.
let mock: MockOpenAI;
beforeAll(async () => {
  mock = await startMockOpenAI({ reply: ({ key }) => ({ "2+2?": "4", "2+3?": "6" })[key] ?? "?" });
});
afterAll(() => mock.close());
const { project } = perTest();

/** Live processes whose command line has `mark`: bwrap's own (which names the command) too. */
function survivors(mark: string, comm?: string): number[] {
  return readdirSync("/proc")
    .filter((name) => /^\d+$/.test(name))
    .filter((pid) => {
      try {
        if (!readFileSync(`/proc/${pid}/cmdline`, "utf8").includes(mark)) return false;
        return comm === undefined || readFileSync(`/proc/${pid}/comm`, "utf8").trim() === comm;
      } catch {
        return false;
      }
    })
    .map(Number);
}

async function until(check: () => boolean, ms: number): Promise<boolean> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (check()) return true;
    await new Promise((r) => setTimeout(r, 50));
  }
  return check();
}

describe.skipIf(SKIP_SANDBOX)("the sandbox through the CLI", () => {
  it("refuses to start without bubblewrap, with the install hint, before any solver call", async () => {
    mock.reset();
    const p = project({
      "eval.ts": `import { defineEval, scorers, solvers } from "stet";
export default defineEval({
  name: "no-bwrap",
  dataset: [{ input: "2+2?" }, { input: "2+3?" }],
  solver: solvers.chat({ model: "m", baseURL: ${JSON.stringify(mock.url)}, apiKey: "sk-x" }),
  scorers: [scorers.code({ command: ["python3", "-"], program: ({ output }) => "print(" + JSON.stringify(output) + ")" })],
  sandbox: { kind: "bubblewrap", bwrap: "/nonexistent/bin/bwrap" },
});
`,
    });
    const result = await runCli(["run", "eval.ts", "--store", p.db], { cwd: p.dir });
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/sandbox: bubblewrap is not available/);
    expect(result.stderr).toMatch(/apt-get install bubblewrap/);
    expect(result.stderr).toMatch(/kind: "none"/);
    expect(mock.requests).toHaveLength(0);
    // No run was recorded.
    const list = await runCli(["list", "--store", p.db, "--json"], { cwd: p.dir });
    if (list.code === 0) expect(JSON.parse(list.stdout)).toEqual([]);
    else expect(existsSync(p.db)).toBe(false);
  });

  it("runs an EvalPort suite's python and javascript code graders", async () => {
    mock.reset();
    const p = project({});
    const suite = {
      version: "1.0.0",
      id: "suite_code",
      graders: [
        {
          id: "gr_py",
          type: "code",
          params: {
            language: "python",
            source:
              "def grade(input, output, expected, context):\n    return output.strip() == expected",
          },
        },
        {
          id: "gr_js",
          type: "code",
          params: {
            language: "javascript",
            source:
              "function grade(input, output, expected) { return output.trim() === expected ? 1 : 0; }",
            timeout_ms: 5000,
          },
        },
      ],
      test_cases: [
        { id: "tc_1", input: "2+2?", expected_output: "4", graders: ["gr_py", "gr_js"] },
        { id: "tc_2", input: "2+3?", expected_output: "5", graders: ["gr_py", "gr_js"] },
      ],
      config: { provider: { model: "m", api_base: mock.url } },
    };
    writeFileSync(join(p.dir, "suite.json"), JSON.stringify(suite));
    const run = await runCli(["run", "suite.json", "--store", p.db, "--json"], { cwd: p.dir });
    expect(run.code, run.stderr).toBe(0);
    const report = JSON.parse(run.stdout) as { metrics: { scorer: string; mean: number }[] };
    expect(report.metrics).toEqual([
      expect.objectContaining({ scorer: "gr_py", mean: 0.5 }),
      expect.objectContaining({ scorer: "gr_js", mean: 0.5 }),
    ]);
  });

  it("a suite's metadata sets its sandbox: a missing bwrap refuses the suite before any model call", async () => {
    mock.reset();
    const p = project({});
    const suite = {
      version: "1.0.0",
      id: "suite_code_nobwrap",
      graders: [
        {
          id: "gr_py",
          type: "code",
          params: { language: "python", source: "def grade(i, o, e, c):\n    return 1" },
        },
      ],
      test_cases: [{ id: "tc_1", input: "2+2?", expected_output: "4", graders: ["gr_py"] }],
      config: { provider: { model: "m", api_base: mock.url } },
      metadata: { "stet.sandbox": { kind: "bubblewrap", bwrap: "/nonexistent/bwrap" } },
    };
    writeFileSync(join(p.dir, "suite.json"), JSON.stringify(suite));
    const run = await runCli(["run", "suite.json", "--store", p.db], { cwd: p.dir });
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/"\/nonexistent\/bwrap" was not found.*apt-get install bubblewrap/);
    expect(mock.requests).toHaveLength(0);
  });

  it("a descriptor stet inherited does not reach the sandbox", async () => {
    // stet starts with pipes of ours as its descriptors 3 to 6, without close-on-exec, as a
    // parent's pipe or log file would be; the program writes to every descriptor above stderr.
    const p = project({
      "eval.ts": `import { defineEval, scorers } from "stet";
export default defineEval({
  name: "descriptors",
  dataset: [{ input: "x" }],
  solver: () => "import os, sys\\nwrote = []\\nfor fd in range(3, 256):\\n    try:\\n        os.write(fd, b'escaped')\\n        wrote.append(fd)\\n    except OSError:\\n        pass\\nprint(wrote)\\nsys.exit(0 if wrote else 1)\\n",
  scorers: [scorers.code({ command: ["python3", "-"], program: ({ output }) => String(output) })],
});
`,
    });
    const child = spawn(process.execPath, [STET_BIN, "run", "eval.ts", "--store", p.db, "--json"], {
      cwd: p.dir,
      env: { ...process.env, NO_COLOR: "1" },
      stdio: ["ignore", "pipe", "pipe", "pipe", "pipe", "pipe", "pipe"],
    });
    const received: string[] = [];
    const streams = child.stdio.slice(1) as Readable[];
    const text = streams.map(() => "");
    streams.forEach((stream, i) =>
      stream.setEncoding("utf8").on("data", (d: string) => {
        text[i] += d;
        if (i >= 2) received.push(`fd ${i + 1}: ${d}`);
      }),
    );
    const code = await new Promise<number | null>((resolve) => child.on("close", resolve));
    expect(code, text[1]).toBe(0);
    const report = JSON.parse(text[0]!) as { metrics: { scorer: string; mean: number }[] };
    expect(report.metrics).toEqual([expect.objectContaining({ scorer: "code", mean: 0 })]);
    expect(received).toEqual([]);
  });

  it("SIGKILL of stet takes every sandboxed process with it", async () => {
    const mark = `stet-sigkill-${process.pid}-${Date.now()}`;
    const p = project({
      "eval.ts": `import { defineEval, scorers } from "stet";
export default defineEval({
  name: "sleepers",
  dataset: [{ input: "a" }, { input: "b" }],
  solver: () => "import os, time\\nos.fork()\\ntime.sleep(300)\\n",
  scorers: [scorers.code({ command: ["python3", "-", ${JSON.stringify(mark)}], program: ({ output }) => String(output), timeoutMs: 120000 })],
  concurrency: 2,
});
`,
    });
    const cli = startCli(["run", "eval.ts", "--store", p.db], { cwd: p.dir });
    // Both samples' programs and their forks run: every sandbox is set up. (Counting bwrap's
    // processes too, a kill could land while one was still setting up, before it arranged to die
    // with its parent.)
    // (Hang guards: the programs sleep 300 s, so "gone within 30 s" still means killed.)
    expect(await until(() => survivors(mark, "python3").length === 4, 60_000)).toBe(true);
    cli.child.kill("SIGKILL");
    await cli.done;
    expect(await until(() => survivors(mark).length === 0, 30_000)).toBe(true);
  }, 150_000);
});
