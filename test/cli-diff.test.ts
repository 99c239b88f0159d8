import { existsSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createApp } from "../src/server/create-app.js";
import { openSqliteStore } from "../src/store/sqlite.js";
import { runCli } from "./helpers/cli.js";
import { evalProject } from "./helpers/eval-project.js";

// `stet diff` through the real CLI (dist/: `npm run build` first) on runs of a 100-sample eval
// whose solver answers wrong for the ids in $WRONG.
const REPO = fileURLToPath(new URL("../", import.meta.url));

const EVAL = `import { defineEval } from "stet";
const wrong = new Set((process.env.WRONG ?? "").split(",").filter(Boolean));
export default defineEval({
  name: "echo100",
  dataset: Array.from({ length: 100 }, (_, i) => ({ id: "s" + String(i).padStart(3, "0"), input: String(i), target: String(i) })),
  solver: (sample) => (wrong.has(sample.id) ? "nope" : String(sample.input)),
  scorers: [function exact({ sample, output }) { return output === sample.target; }],
});
`;

/** s003, s013, …, s093: the ten samples run B gets wrong. */
const WRONG = Array.from({ length: 10 }, (_, i) => `s${String(i * 10 + 3).padStart(3, "0")}`);

let project: ReturnType<typeof evalProject>;
let store: string;
const ids = { a: "", b: "", same: "", short: "" };

function cli(args: string[], env: NodeJS.ProcessEnv = {}) {
  return runCli(args, { cwd: project.dir, env });
}

async function run(env: NodeJS.ProcessEnv, extra: string[] = []): Promise<string> {
  const result = await cli(["run", "echo.mjs", "--store", store, "--json", ...extra], env);
  expect(result.code).toBe(0);
  return (JSON.parse(result.stdout) as { runId: string }).runId;
}

beforeAll(async () => {
  if (!existsSync(join(REPO, "dist/cli/bin.js"))) throw new Error("run `npm run build` first");
  project = evalProject({ "echo.mjs": EVAL });
  store = join(project.dir, "stet.db");
  ids.a = await run({});
  ids.b = await run({ WRONG: WRONG.join(",") });
  ids.same = await run({});
  ids.short = await run({}, ["--limit", "90"]);
}, 60_000);
afterAll(() => project.cleanup());

interface DiffJson {
  runA: string;
  runB: string;
  scorers: {
    scorer: string;
    meanA: number;
    meanB: number;
    delta: number;
    ciLow: number;
    ciHigh: number;
    pValue: number;
    test: string;
    improved: number;
    regressed: number;
    unchanged: number;
    regressedIds: string[];
  }[];
  onlyInA: string[];
  onlyInB: string[];
}

describe("stet diff", () => {
  it("finds ten samples going from right to wrong a significant regression", async () => {
    const result = await cli(["diff", ids.a, ids.b, "--store", store, "--json"]);
    expect(result.code).toBe(0);
    const diff = JSON.parse(result.stdout) as DiffJson;
    expect(diff).toMatchObject({ runA: ids.a, runB: ids.b, onlyInA: [], onlyInB: [] });
    const [exact] = diff.scorers;
    expect(exact).toMatchObject({
      scorer: "exact",
      meanA: 1,
      meanB: 0.9,
      test: "mcnemar-exact",
      improved: 0,
      regressed: 10,
      unchanged: 90,
      regressedIds: WRONG,
    });
    expect(exact!.delta).toBeCloseTo(-0.1, 12);
    expect(exact!.ciHigh).toBeLessThan(0);
    expect(exact!.ciLow).toBeLessThan(-0.1);
    expect(exact!.pValue).toBeLessThan(0.05);
    expect(exact!.pValue).toBeCloseTo(2 * 0.5 ** 10, 12);

    const failing = await cli(["diff", ids.a, ids.b, "--store", store, "--fail-on-regression"]);
    expect(failing.code).toBe(4);
    expect(failing.stdout).toMatch(/exact .*-0\.100/);
    expect(failing.stdout).toContain(`regressed (exact): ${WRONG.join(", ")}`);
    expect(failing.stderr).toContain("significant regression");
    // The other way round it is an improvement: nothing fails.
    const back = await cli(["diff", ids.b, ids.a, "--store", store, "--fail-on-regression"]);
    expect(back.code).toBe(0);
  });

  it("finds identical runs unchanged: delta 0, p 1, nothing regressed", async () => {
    const result = await cli([
      "diff",
      ids.a,
      ids.same,
      "--store",
      store,
      "--json",
      "--fail-on-regression",
    ]);
    expect(result.code).toBe(0);
    const diff = JSON.parse(result.stdout) as DiffJson;
    expect(diff.scorers[0]).toMatchObject({
      delta: 0,
      ciLow: 0,
      ciHigh: 0,
      pValue: 1,
      regressed: 0,
      improved: 0,
      unchanged: 100,
      regressedIds: [],
    });
  });

  it("reports the samples only one run has instead of dropping them", async () => {
    const result = await cli(["diff", ids.a, ids.short, "--store", store, "--json"]);
    const diff = JSON.parse(result.stdout) as DiffJson;
    expect(diff.onlyInA).toEqual(Array.from({ length: 10 }, (_, i) => `s0${90 + i}`));
    expect(diff.onlyInB).toEqual([]);
    expect(diff.scorers[0]).toMatchObject({ unchanged: 90, pValue: 1 });
    const text = await cli(["diff", ids.a, ids.short, "--store", store]);
    expect(text.stdout).toContain(`only in ${ids.a}: 10 (s090, s091`);
  });

  it("refuses an unknown run by name, and serves the same document at GET /api/diff", async () => {
    const missing = await cli(["diff", ids.a, "r_nope", "--store", store]);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain('no run with id "r_nope"');

    const cliDiff = await cli(["diff", ids.a, ids.b, "--store", store, "--json"]);
    const opened = openSqliteStore(store, { create: false });
    try {
      const app = createApp({ store: opened });
      const res = await app.request(`/api/diff?a=${ids.a}&b=${ids.b}`);
      expect(res.status).toBe(200);
      expect(await res.json()).toEqual(JSON.parse(cliDiff.stdout));
      const unknown = await app.request(`/api/diff?a=${ids.a}&b=r_nope`);
      expect(unknown.status).toBe(404);
      expect(await app.request(`/api/diff?a=${ids.a}`)).toHaveProperty("status", 400);
    } finally {
      await opened.close();
    }
  });
});
