import { copyFileSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli } from "./helpers/cli.js";
import { evalProject } from "./helpers/eval-project.js";
import { SKIP_POSTGRES, testSchemaPool } from "./helpers/postgres.js";

// Baselines through the real CLI: three labelled runs on main (and a newer one that errored), runs
// on a branch, `stet diff --baseline branch=main <run>` and its Markdown report.

const EVAL = `import { defineEval } from "stet";
const wrong = new Set((process.env.WRONG ?? "").split(",").filter(Boolean));
export default defineEval({
  name: "echo100",
  dataset: Array.from({ length: 100 }, (_, i) => ({ id: "s" + String(i).padStart(3, "0"), input: "q" + i, target: "q" + i })),
  solver: (sample) => {
    if (process.env.THROW === sample.id) throw new Error("boom");
    return wrong.has(sample.id) ? "nope" : String(sample.input);
  },
  scorers: [function exact({ sample, output }) { return output === sample.target; }],
  retries: 0,
});
`;

/** s003, s013, …, s093: the ten samples a regressed run gets wrong. */
const WRONG = Array.from({ length: 10 }, (_, i) => `s${String(i * 10 + 3).padStart(3, "0")}`);

let project: ReturnType<typeof evalProject>;
let store: string;
const ids = { main: [] as string[], errored: "", regressed: "", same: "", short: "", model: "" };

function cli(args: string[], env: NodeJS.ProcessEnv = {}) {
  return runCli(args, {
    cwd: project.dir,
    env: { GITHUB_ACTIONS: "", GITHUB_STEP_SUMMARY: "", ...env },
  });
}

async function run(labels: string[], env: NodeJS.ProcessEnv = {}, extra: string[] = []) {
  const args = ["run", "echo.mjs", "--store", store, "--json", ...extra];
  const result = await cli([...args, ...labels.flatMap((l) => ["--label", l])], env);
  return (JSON.parse(result.stdout) as { runId: string }).runId;
}

beforeAll(async () => {
  project = evalProject({ "echo.mjs": EVAL });
  store = join(project.dir, "stet.db");
  for (const sha of ["a1", "a2", "a3"]) ids.main.push(await run(["branch=main", `sha=${sha}`]));
  // The newest main run errored on a sample: not complete, so never a baseline.
  ids.errored = await run(["branch=main", "sha=a4"], { THROW: "s050" });
  ids.regressed = await run(["branch=fix"], { WRONG: WRONG.join(",") });
  ids.same = await run(["branch=fix"]);
  ids.short = await run(["branch=fix"], {}, ["--limit", "90"]);
  ids.model = await run(["branch=fix"], {}, ["--model", "other-model"]);
}, 120_000);
afterAll(() => project.cleanup());

describe("stet diff --baseline", () => {
  it("picks the newest complete main run, prints its age, exits 4 on a seeded regression", async () => {
    const args = ["diff", "--baseline", "branch=main", ids.regressed, "--store", store];
    const result = await cli([...args, "--fail-on-regression"]);
    expect(result.code).toBe(4);
    expect(result.stdout).toMatch(
      new RegExp(
        `baseline ${ids.main[2]} \\(branch=main sha=a3\\), \\d+ (s|min) .*older, chosen by branch=main`,
      ),
    );
    expect(result.stdout).toMatch(/exact .*-0\.100/);
    expect(result.stderr).toContain("significant regression");
    const json = await cli([...args, "--json"]);
    expect(JSON.parse(json.stdout)).toMatchObject({
      runA: ids.main[2],
      runB: ids.regressed,
      baseline: { id: ids.main[2], labels: { branch: "main", sha: "a3" }, selector: "branch=main" },
      scorers: [
        { scorer: "exact", regressed: 10, regressedIds: WRONG, significantRegression: true },
      ],
    });
  });

  it("exits 0 when nothing changed, and picks by a run id or latest too", async () => {
    const same = await cli([
      "diff",
      "--baseline",
      "branch=main",
      ids.same,
      "--store",
      store,
      "--fail-on-regression",
    ]);
    expect(same.code).toBe(0);
    expect(same.stdout).toContain(`baseline ${ids.main[2]}`);
    const byId = await cli(["diff", "--baseline", ids.main[0]!, ids.same, "--store", store]);
    expect(byId.stdout).toContain(`baseline ${ids.main[0]} (branch=main sha=a1)`);
    // latest: the newest complete comparable run of the eval, whatever its labels (here the
    // 90-sample run, so only with --common).
    const latest = await cli([
      "diff",
      "--baseline",
      "latest",
      ids.regressed,
      "--store",
      store,
      "--common",
    ]);
    expect(latest.stdout).toContain(`baseline ${ids.short} (branch=fix)`);
    expect(latest.stdout).toContain("compared on the samples both runs have (--common)");
  });

  it("refuses a baseline with another model, with the field diff", async () => {
    const result = await cli(["diff", "--baseline", "branch=main", ids.model, "--store", store]);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain(`baseline ${ids.main[2]} is not comparable with ${ids.model}`);
    expect(result.stderr).toContain('model: null → "other-model"');
  });

  it("refuses different samples, or compares the common ones with --common", async () => {
    const args = ["diff", "--baseline", "branch=main", ids.short, "--store", store];
    const refused = await cli(args);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain("10 only in the baseline");
    expect(refused.stderr).toContain("pass --common to compare the 90 they share");
    const common = await cli([...args, "--common", "--json"]);
    expect(common.code).toBe(0);
    expect(JSON.parse(common.stdout)).toMatchObject({ common: true, scorers: [{ paired: 90 }] });
  });

  it("says so with its own exit code when no baseline is found", async () => {
    const result = await cli(["diff", "--baseline", "branch=nowhere", ids.same, "--store", store]);
    expect(result.code).toBe(7);
    expect(result.stderr).toContain(
      `no baseline for ${ids.same}: no complete run of eval "echo100" labelled branch=nowhere`,
    );
    expect(result.stderr).not.toMatch(/\n\s+at /);
  });

  it("writes a Markdown report byte-identical for the same stores, and the step summary", async () => {
    const args = ["diff", "--baseline", "branch=main", ids.regressed, "--format", "markdown"];
    const first = await cli([...args, "--store", store]);
    expect(first.code).toBe(0);
    const copy = join(project.dir, "copy.db");
    copyFileSync(store, copy);
    const summary = join(project.dir, "summary.md");
    writeFileSync(summary, "before\n");
    const second = await cli([...args, "--store", copy], { GITHUB_STEP_SUMMARY: summary });
    expect(second.stdout).toBe(first.stdout);
    expect(readFileSync(summary, "utf8")).toBe(`before\n${first.stdout}\n`);
    const md = first.stdout;
    expect(md).toMatch(/^### stet diff · echo100 · regression\n/);
    expect(md).toContain(`compared with **baseline** \`${ids.main[2]}\` (branch=main sha=a3)`);
    expect(md).toMatch(
      /\| exact \| ❌ regressed \| 1\.000 \| 0\.900 \| -0\.100 \| \[-0\.\d+, -0\.\d+\] \| 0\.0020 \| 100 \|/,
    );
    expect(md).toContain("**Spend:** baseline");
    expect(md).toContain("Regressed samples (exact): 10");
    expect(md).toContain("| `s003` | q3 | q3 | q3 | nope |");
  });

  it("runs and compares in one step: stet run --baseline --fail-on-regression", async () => {
    const regressed = await cli(
      [
        "run",
        "echo.mjs",
        "--store",
        store,
        "--label",
        "branch=fix",
        "--baseline",
        "branch=main",
        "--fail-on-regression",
      ],
      { WRONG: WRONG.join(",") },
    );
    expect(regressed.code).toBe(4);
    expect(regressed.stdout).toContain(`baseline ${ids.main[2]}`);
    const fine = await cli([
      "run",
      "echo.mjs",
      "--store",
      store,
      "--baseline",
      "branch=main",
      "--fail-on-regression",
    ]);
    expect(fine.code).toBe(0);
  });

  it.skipIf(SKIP_POSTGRES)("picks and compares the same way on a PostgreSQL store", async () => {
    const { url } = testSchemaPool();
    const pgRun = async (labels: string[], env: NodeJS.ProcessEnv = {}) => {
      const args = ["run", "echo.mjs", "--store", url, "--json"];
      const result = await cli([...args, ...labels.flatMap((l) => ["--label", l])], env);
      expect(result.code).toBe(0);
      return (JSON.parse(result.stdout) as { runId: string }).runId;
    };
    await pgRun(["branch=main", "sha=p1"]);
    const newest = await pgRun(["branch=main", "sha=p2"]);
    const branch = await pgRun(["branch=fix"], { WRONG: WRONG.join(",") });
    const args = ["diff", "--baseline", "branch=main", branch, "--store", url];
    const result = await cli([...args, "--fail-on-regression"]);
    expect(result.code).toBe(4);
    expect(result.stdout).toContain(`baseline ${newest} (branch=main sha=p2)`);
    const listed = await cli(["list", "--store", url, "--label", "sha=p2", "--json"]);
    expect((JSON.parse(listed.stdout) as { id: string }[]).map((r) => r.id)).toEqual([newest]);
  });
});
