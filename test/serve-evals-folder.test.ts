import { existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { runCli, startCli } from "./helpers/cli.js";
import { evalProject, rawRun } from "./helpers/eval-project.js";
import { startMockOpenAI } from "./helpers/mock-openai.js";
import { startServe, type ServeProcess } from "./helpers/serve.js";
import { collectSse } from "./helpers/sse.js";
import { until } from "./helpers/wait.js";

// `stet serve --evals .` in a project's folder: its package.json, package-lock.json and
// tsconfig.json are no EvalPort suites and are left alone; two evals of one name are refused
// before anything is served; and every run of an eval in the folder can be resumed.

const cleanups: (() => Promise<unknown> | unknown)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

/** A project's own files, as `npm init` and `tsc --init` leave them (tsconfig with comments). */
const PROJECT_FILES = {
  "package.json": JSON.stringify(
    { name: "my-evals", version: "1.0.0", type: "module", dependencies: { stet: "^0.1.0" } },
    null,
    2,
  ),
  "package-lock.json": JSON.stringify(
    {
      name: "my-evals",
      version: "1.0.0",
      lockfileVersion: 3,
      requires: true,
      packages: { "": { name: "my-evals", version: "1.0.0" } },
    },
    null,
    2,
  ),
  "tsconfig.json": `{
  // Visit https://aka.ms/tsconfig to read more about this file
  "compilerOptions": { "target": "es2022", "module": "nodenext", "strict": true }
}
`,
};

/** An eval module whose solver fails sample s2 while $FAIL_S2 is set: its run is resumable. */
function evalModule(name: string): string {
  return `import { defineEval, scorers } from "stet";
export default defineEval({
  name: ${JSON.stringify(name)},
  dataset: Array.from({ length: 4 }, (_, i) => ({ id: "s" + i, input: "s" + i, target: "s" + i })),
  solver: async ({ id, input }) => {
    if (id === "s2" && process.env.FAIL_S2) throw new Error("s2 failed this time");
    return input;
  },
  scorers: [scorers.exact()],
});
`;
}

/** Runs `file` with sample s2 failing: an errored run, resumable. */
async function erroredRun(dir: string, file: string, db: string): Promise<string> {
  const run = await runCli(["run", file, "--store", db, "--json"], {
    cwd: dir,
    env: { FAIL_S2: "1" },
  });
  expect(run.code, run.stderr).toBe(3);
  return (JSON.parse(run.stdout.slice(run.stdout.indexOf("{\n"))) as { runId: string }).runId;
}

/** Resumes `runId` through the API and waits for the stored run to complete. */
async function resumedToCompletion(
  server: ServeProcess,
  db: string,
  runId: string,
  body?: unknown,
): Promise<void> {
  const response = await server.post(`/api/runs/${runId}/resume`, body);
  expect(response.status, await response.clone().text()).toBe(200);
  const events = await collectSse(response);
  expect(events.at(-1)?.event).toBe("completed");
  await until(() => rawRun(db, runId)?.status === "completed", `run ${runId} completed`);
}

/** `stet serve --evals <dir>`: the project's folder as its evals, as `--evals .` there. */
async function serveFolder(dir: string, db: string) {
  const server = await startServe(["--store", db, "--evals", dir]);
  cleanups.push(() => server.proc.child.kill("SIGKILL"));
  return server;
}

describe("stet serve --evals <a project's folder>", () => {
  it("ignores the project's JSON files in one line, lists its evals and resumes a run of each", async () => {
    // The suite's second test case fails at the endpoint the first time: a resumable run.
    const mock = await startMockOpenAI({
      respond: ({ key, n }) => (key === "3+3?" && n === 1 ? { status: 400 } : undefined),
      reply: ({ key }) => ({ "2+2?": "4", "3+3?": "6" })[key] ?? "?",
    });
    cleanups.push(() => mock.close());
    const suite = {
      version: "1.0.0",
      id: "arith-suite",
      graders: [{ id: "gr_exact", type: "exact_match" }],
      test_cases: [
        { id: "tc_1", input: "2+2?", expected_output: "4", graders: ["gr_exact"] },
        { id: "tc_2", input: "3+3?", expected_output: "6", graders: ["gr_exact"] },
      ],
      config: { provider: { model: "m", api_base: mock.url }, retry: { max_attempts: 1 } },
    };
    const p = evalProject({
      ...PROJECT_FILES,
      "arith.mjs": evalModule("arith"),
      "arith-suite.json": JSON.stringify(suite, null, 2),
    });
    cleanups.push(p.cleanup);
    const db = join(p.dir, "stet.db");
    const runs = {
      arith: await erroredRun(p.dir, "arith.mjs", db),
      suite: await erroredRun(p.dir, "arith-suite.json", db),
    };

    const server = await serveFolder(p.dir, db);
    // Started clean: one short line names the files left alone, and no schema error is printed.
    const ignored =
      "evals: not EvalPort suites, ignored: package-lock.json, package.json, tsconfig.json";
    await until(() => server.proc.stderr().includes(ignored), "the line of ignored files");
    expect(server.proc.stderr().trim().split("\n")).toEqual([ignored]);
    const evals = (await (await server.fetch("/api/evals")).json()) as {
      evals: { name: string; path: string }[];
      problems: unknown[];
    };
    expect(evals).toEqual({
      evals: [
        { name: "arith-suite", path: join(p.dir, "arith-suite.json") },
        { name: "arith", path: join(p.dir, "arith.mjs") },
      ],
      problems: [],
    });

    // A run of every listed eval resumes through the API, executing what was left.
    for (const runId of Object.values(runs)) await resumedToCompletion(server, db, runId);
    expect(server.proc.stderr().trim().split("\n")).toEqual([ignored]);
  });

  it("refuses two evals of one name at start-up, naming both files, and serves nothing", async () => {
    const p = evalProject({
      ...PROJECT_FILES,
      "first.mjs": evalModule("twin"),
      "second.mjs": evalModule("twin"),
    });
    cleanups.push(p.cleanup);
    const db = join(p.dir, "stet.db");
    // A run of each file, started with the CLI before anyone served the folder.
    const runs = {
      first: await erroredRun(p.dir, "first.mjs", db),
      second: await erroredRun(p.dir, "second.mjs", db),
    };
    const fresh = join(p.dir, "fresh.db");

    const refused = startCli(["serve", "--port", "0", "--evals", ".", "--store", fresh], {
      cwd: p.dir,
    });
    cleanups.push(() => refused.child.kill("SIGKILL"));
    const result = await refused.done;
    expect(result.code).toBe(1);
    expect(result.stdout).not.toContain("listening");
    expect(result.stderr).toContain(
      `"twin": ${join(p.dir, "first.mjs")}, ${join(p.dir, "second.mjs")}`,
    );
    expect(result.stderr).not.toMatch(/\n\s+at /); // no stack trace
    expect(existsSync(fresh)).toBe(false);

    // Renamed, the second eval is served too and the first file's run resumes. The second
    // file's run was of "twin": a run holds one eval's results, so "twin-2" may not go on with it
    // (409 eval_changed, acknowledged or not, saying so), exactly as `stet resume` refuses it.
    writeFileSync(join(p.dir, "second.mjs"), evalModule("twin-2"));
    const server = await serveFolder(p.dir, db);
    await resumedToCompletion(server, db, runs.first);
    for (const body of [undefined, { allowEvalChange: true }]) {
      const changed = await server.post(`/api/runs/${runs.second}/resume`, body);
      expect(changed.status).toBe(409);
      const { error } = (await changed.json()) as { error: { code: string; message: string } };
      expect(error.code).toBe("eval_changed");
      expect(error.message).toContain('a run of eval "twin", not of "twin-2"');
    }
  });

  it("says why a run of a file in the folder cannot resume when that file no longer loads", async () => {
    const p = evalProject({ "arith.mjs": evalModule("arith") });
    cleanups.push(p.cleanup);
    const db = join(p.dir, "stet.db");
    const runId = await erroredRun(p.dir, "arith.mjs", db);
    writeFileSync(join(p.dir, "arith.mjs"), `export default { name: 42 };`);

    const server = await serveFolder(p.dir, db);
    const response = await server.post(`/api/runs/${runId}/resume`);
    const { error } = (await response.json()) as { error: { code: string; message: string } };
    expect(error.code).toBe("eval_load_failed");
    expect(error.message).toContain(
      `was started from ${join(p.dir, "arith.mjs")}, which this server failed to load`,
    );
    expect(error.message).not.toContain("not one of");
    expect(rawRun(db, runId)).toMatchObject({ status: "errored" });
  });
});
