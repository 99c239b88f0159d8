import { describe, expect, it } from "vitest";
import { runCli } from "./helpers/cli.js";
import { perTest } from "./helpers/eval-project.js";
import { recordLoads } from "./helpers/loaded-modules.js";

// Start-up is paid by every command: each loads what it needs and nothing else. These tests
// check which modules a real CLI process loaded (a load hook records them), not how long it took.

const instant = `
import { defineEval, scorers } from "stet";
export default defineEval({
  name: "instant",
  dataset: [{ id: "a", input: "x", target: "x" }],
  solver: (sample) => sample.input,
  scorers: [scorers.exact()],
});
`;

const { project, track } = perTest();

/** Runs `stet <args>` in `dir` and lists the modules the process loaded. */
async function modulesLoadedBy(args: string[], dir: string): Promise<string[]> {
  const loads = track(recordLoads());
  const result = await runCli(args, { cwd: dir, env: loads.env });
  expect(result.code, result.stderr).toBe(0);
  return loads.modules();
}

async function startedRun(dir: string, evalFile: string): Promise<string> {
  const run = await runCli(["run", evalFile, "--json"], { cwd: dir });
  expect(run.code, run.stderr).toBe(0);
  return (JSON.parse(run.stdout) as { runId: string }).runId;
}

const matching = (modules: string[], pattern: RegExp) => modules.filter((m) => pattern.test(m));

const POSTGRES = /node_modules\/pg(-[a-z]+)?\//;
const SERVER = /node_modules\/(hono|@hono)\/|^src\/server\/|^dist\/ui\//;
const VALIDATION = /node_modules\/ajv|^src\/evalport\/(validate|schema)/;
const CSV = /node_modules\/csv-(parse|stringify)\/|^src\/cli\/export-csv/;
const ENGINE = /^src\/engine\/(execute-run|execute-key|attempt-writer|heartbeat)\.ts$/;
const TRANSPILER = /node_modules\/(esbuild|tsx)\/|^src\/eval\/(import-typescript|ts-transpile)/;

describe("what a command loads", () => {
  it("stet run of an .mjs eval on a SQLite store: no PostgreSQL driver, server, validation or CSV", async () => {
    const { dir } = project({ "eval.mjs": instant });
    const modules = await modulesLoadedBy(["run", "eval.mjs", "--store", "stet.db"], dir);
    expect(matching(modules, ENGINE).length).toBeGreaterThan(0);
    expect(matching(modules, /node_modules\/better-sqlite3\//).length).toBeGreaterThan(0);
    for (const unwanted of [POSTGRES, SERVER, VALIDATION, CSV, TRANSPILER]) {
      expect(matching(modules, unwanted)).toEqual([]);
    }
    // No model is called: the HTTP client is loaded by the first request, not at start-up.
    expect(matching(modules, /^node:https?$/)).toEqual([]);
  });

  it("stet run of a .ts eval with a warm cache loads neither esbuild nor tsx", async () => {
    const { dir } = project({ "eval.ts": instant });
    await startedRun(dir, "eval.ts");
    const modules = await modulesLoadedBy(["run", "eval.ts", "--store", "stet.db"], dir);
    expect(matching(modules, /node_modules\/\.cache\/stet\/ts\/[0-9a-f]+\.mjs$/)).toHaveLength(1);
    expect(matching(modules, /node_modules\/(esbuild|tsx)\/|^src\/eval\/ts-transpile/)).toEqual([]);
    for (const unwanted of [POSTGRES, SERVER, VALIDATION, CSV]) {
      expect(matching(modules, unwanted)).toEqual([]);
    }
  });

  it.each([["list"], ["show", "RUN"]])(
    "stet %s loads neither the engine nor the transpiler",
    async (...command) => {
      const { dir } = project({ "eval.ts": instant });
      const runId = await startedRun(dir, "eval.ts");
      const modules = await modulesLoadedBy(
        command.map((a) => (a === "RUN" ? runId : a)),
        dir,
      );
      expect(modules).toContain(`src/cli/commands/${command[0]}.ts`);
      for (const unwanted of [ENGINE, TRANSPILER, POSTGRES, SERVER, VALIDATION, CSV]) {
        expect(matching(modules, unwanted)).toEqual([]);
      }
    },
  );

  // The patterns above name real modules: the commands that need them do load them.
  it("stet export --format csv loads the CSV writer, stet validate the validator", async () => {
    const { dir } = project({ "eval.mjs": instant });
    const runId = await startedRun(dir, "eval.mjs");
    const csv = await modulesLoadedBy(["export", runId, "--format", "csv", "-o", "out.csv"], dir);
    expect(matching(csv, CSV).length).toBeGreaterThan(0);
    const exported = await runCli(["export", runId, "--format", "resultset", "-o", "rs.json"], {
      cwd: dir,
    });
    expect(exported.code, exported.stderr).toBe(0);
    const validate = await modulesLoadedBy(["validate", "rs.json"], dir);
    expect(matching(validate, VALIDATION).length).toBeGreaterThan(0);
  });
});
