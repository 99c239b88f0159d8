import { existsSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createApp } from "../src/server/create-app.js";
import { openSqliteStore } from "../src/store/sqlite/index.js";
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
const ids = { a: "", b: "", same: "", short: "", other: "" };

/** Another eval whose sample ids differ from echo100's: nothing of it pairs with echo100. */
const OTHER_EVAL = `import { defineEval } from "stet";
export default defineEval({
  name: "other",
  dataset: [{ id: "x1", input: "1", target: "1" }, { id: "x2", input: "2", target: "2" }],
  solver: (sample) => String(sample.input),
  scorers: [function exact({ sample, output }) { return output === sample.target; }],
});
`;

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
  project = evalProject({ "echo.mjs": EVAL, "other.mjs": OTHER_EVAL });
  store = join(project.dir, "stet.db");
  ids.a = await run({});
  ids.b = await run({ WRONG: WRONG.join(",") });
  ids.same = await run({});
  ids.short = await run({}, ["--limit", "90"]);
  const other = await cli(["run", "other.mjs", "--store", store, "--json"]);
  expect(other.code).toBe(0);
  ids.other = (JSON.parse(other.stdout) as { runId: string }).runId;
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

  it("refuses runs of two different evals (exit 2, both named) unless --allow-different-evals", async () => {
    const refused = await cli(["diff", ids.a, ids.other, "--store", store]);
    expect(refused.code).toBe(2);
    expect(refused.stdout).toBe("");
    expect(refused.stderr).toContain(
      `runs ${ids.a} and ${ids.other} are of different evals ("echo100" and "other")`,
    );
    expect(refused.stderr).toContain("--allow-different-evals");
    expect(refused.stderr).not.toMatch(/\n\s+at /);

    const allowed = await cli([
      "diff",
      ids.a,
      ids.other,
      "--store",
      store,
      "--allow-different-evals",
    ]);
    expect(allowed.code).toBe(0);
    expect(allowed.stdout).toContain('different evals: "echo100" and "other"');
    // Nothing pairs: no p-value and no test are printed for an empty comparison.
    expect(allowed.stdout).toMatch(/exact\s+0\s+—\s+—\s+—\s+—\s+—\s+—/);
    const json = await cli([
      "diff",
      ids.a,
      ids.other,
      "--store",
      store,
      "--allow-different-evals",
      "--json",
    ]);
    expect(JSON.parse(json.stdout)).toMatchObject({ evalA: "echo100", evalB: "other" });

    const opened = openSqliteStore(store, { create: false });
    try {
      const app = createApp({ store: opened });
      const res = await app.request(`/api/diff?a=${ids.a}&b=${ids.other}`);
      expect(res.status).toBe(400);
      expect(await res.json()).toMatchObject({ error: { code: "different_evals" } });
      const ok = await app.request(`/api/diff?a=${ids.a}&b=${ids.other}&allowDifferentEvals=true`);
      expect(ok.status).toBe(200);
    } finally {
      await opened.close();
    }
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
