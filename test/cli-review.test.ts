import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { beforeEach, describe, expect, it } from "vitest";
import { runCli } from "./helpers/cli.js";
import { dumpDb } from "./helpers/db-dump.js";
import { perTest } from "./helpers/eval-project.js";
import { dumpPg } from "./helpers/pg-dump.js";
import { SKIP_POSTGRES, testSchemaPool } from "./helpers/postgres.js";

// `stet review --import/--export` and `stet show` through the real CLI (dist/: build first), on
// a run of 20 samples whose solver gets s02, s07, s12 and s17 wrong.
const EVAL = `import { defineEval } from "stet";
const wrong = new Set(["s02", "s07", "s12", "s17"]);
export default defineEval({
  name: "echo20",
  dataset: Array.from({ length: 20 }, (_, i) => ({ id: "s" + String(i).padStart(2, "0"), input: String(i), target: String(i) })),
  solver: (sample) => (wrong.has(sample.id) ? "nope" : String(sample.input)),
  scorers: [function exact({ sample, output }) { return output === sample.target; }],
});
`;

const { project } = perTest();
let dir = "";
let store = "";
let runId = "";

function cli(args: string[], env: NodeJS.ProcessEnv = {}) {
  return runCli(args, { cwd: dir, env });
}

/** The attempt and scoring rows, as the database holds them. */
function paidRows(): string {
  const dump = JSON.parse(dumpDb(store)) as Record<string, string[]>;
  return JSON.stringify({ attempts: dump.attempts, scorings: dump.scorings });
}

/** A review CSV of the 20 samples: agreeing with the judge but on s00 (fail) and s02 (pass). */
function reviewsCsv(): string {
  const rows = Array.from({ length: 20 }, (_, i) => {
    const id = `s${String(i).padStart(2, "0")}`;
    const wrong = ["s02", "s07", "s12", "s17"].includes(id);
    const fail = wrong ? id !== "s02" : id === "s00";
    return `${id},1,${fail ? "fail" : "pass"},"looked, twice"`;
  });
  return ["sample_id,epoch,verdict,note", ...rows].join("\n") + "\n";
}

beforeEach(async () => {
  const p = project({ "echo.mjs": EVAL });
  dir = p.dir;
  store = join(dir, "stet.db");
  const run = await cli(["run", "echo.mjs", "--store", store, "--json"]);
  expect(run.code).toBe(0);
  runId = (JSON.parse(run.stdout) as { runId: string }).runId;
});

describe("stet review", () => {
  it("imports 20 reviews from CSV without touching an attempt; show lists the human scorer and agreement", async () => {
    writeFileSync(join(dir, "reviews.csv"), reviewsCsv());
    const before = paidRows();
    const imported = await cli(["review", runId, "--import", "reviews.csv", "--store", store], {
      STET_REVIEWER: "ada",
    });
    expect(imported.stderr).toBe("");
    expect(imported.code).toBe(0);
    expect(imported.stdout).toContain(`stored 20 review(s) of run ${runId}`);
    expect(paidRows()).toBe(before);

    const shown = await cli(["show", runId, "--store", store, "--json"]);
    const view = JSON.parse(shown.stdout) as {
      metrics: { scorer: string; mean: number }[];
      agreement: {
        human: string;
        scorer: string;
        rate: number;
        kappa: number;
        matrix: number[][];
      }[];
    };
    expect(view.metrics.map((m) => m.scorer)).toEqual(["exact", "human"]);
    expect(view.metrics[1]!.mean).toBeCloseTo(16 / 20, 12);
    expect(view.agreement[0]).toMatchObject({ human: "human", scorer: "exact", rate: 0.9 });
    expect(view.agreement[0]!.matrix).toEqual([
      [3, 1],
      [1, 15],
    ]);
    expect(view.agreement[0]!.kappa).toBeCloseTo(0.6875, 12);
    const text = await cli(["show", runId, "--store", store]);
    expect(text.stdout).toMatch(/^human\s+0\.8000/m);
    expect(text.stdout).toContain("agreement human vs exact: 20 keys · 90.0% agree · κ 0.687 (95%");
    const markdown = await cli(["export", runId, "--format", "markdown", "--store", store]);
    expect(markdown.stdout).toMatch(/^\| human \| 0\.8000 \| 0\.0918 \| 20 \|$/m);
    expect(markdown.stdout).toMatch(
      /^\| human \| exact \| 20 \| 90\.0% \| 0\.687 \(0\.285 to 1\.000\) \|$/m,
    );
  });

  it("exports the history as CSV, reviewer included, and a re-review keeps both", async () => {
    writeFileSync(join(dir, "one.csv"), "sample_id,verdict\ns03,fail\n");
    writeFileSync(join(dir, "again.csv"), "sample_id,value,note\ns03,1,second look\n");
    for (const file of ["one.csv", "again.csv"]) {
      const r = await cli([
        "review",
        runId,
        "--import",
        file,
        "--reviewer",
        "grace",
        "--store",
        store,
      ]);
      expect(r.code).toBe(0);
    }
    const exported = await cli(["review", runId, "--export", "out/reviews.csv", "--store", store]);
    expect(exported.code).toBe(0);
    const lines = readFileSync(join(dir, "out/reviews.csv"), "utf8").trimEnd().split("\n");
    expect(lines[0]).toBe(
      "sample_id,epoch,attempt,scorer,reviewer,verdict,value,note,created_at,current",
    );
    expect(lines[1]).toMatch(/^s03,1,1,human,grace,fail,0,,[\d-]+T[\d:.]+Z,false$/);
    expect(lines[2]).toMatch(/^s03,1,1,human,grace,pass,1,second look,[\d-]+T[\d:.]+Z,true$/);
    // The export reads back as an import (created_at and current are the store's own).
    const again = await cli(["review", runId, "--import", "out/reviews.csv", "--store", store]);
    expect(again.code).toBe(0);
    const stdout = await cli(["review", runId, "--export", "--store", store]);
    expect(stdout.stdout.trimEnd().split("\n")).toHaveLength(5);
  });

  it.each<[string, string, RegExp]>([
    [
      "an unknown sample",
      "sample_id,verdict\ns99,pass\n",
      /reviews\.csv:2: run r_\w+ has no sample "s99"/,
    ],
    ["a bad verdict", "sample_id,verdict\ns01,pass\ns02,maybe\n", /reviews\.csv:3: verdict/],
    [
      "an unknown column",
      "sample_id,verdict,grade\ns01,pass,A\n",
      /reviews\.csv:2: unknown column "grade"/,
    ],
    ["a value that is no number", "sample_id,value\ns01,high\n", /reviews\.csv:2: value/],
  ])("refuses a CSV with %s, naming the line, and stores nothing", async (_label, csv, message) => {
    writeFileSync(join(dir, "reviews.csv"), csv);
    const before = dumpDb(store);
    const r = await cli([
      "review",
      runId,
      "--import",
      "reviews.csv",
      "--reviewer",
      "ada",
      "--store",
      store,
    ]);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(message);
    expect(r.stderr).not.toMatch(/\n\s+at /);
    expect(dumpDb(store)).toBe(before);
  });

  it("refuses an import with no reviewer, and a call with neither flag", async () => {
    writeFileSync(join(dir, "reviews.csv"), "sample_id,verdict\ns01,pass\n");
    const anonymous = await cli(["review", runId, "--import", "reviews.csv", "--store", store]);
    expect(anonymous.code).not.toBe(0);
    expect(anonymous.stderr).toContain("reviews.csv:2: no reviewer");
    const neither = await cli(["review", runId, "--store", store]);
    expect(neither.code).toBe(2);
    expect(neither.stderr).toContain("exactly one of --import <file> and --export [file]");
  });

  it.skipIf(SKIP_POSTGRES)(
    "on PostgreSQL: 20 reviews from CSV leave every attempt and scoring row as it was",
    async () => {
      const { url, db } = testSchemaPool();
      const run = await cli(["run", "echo.mjs", "--store", url, "--json"]);
      expect(run.code, run.stderr).toBe(0);
      const pgRun = (JSON.parse(run.stdout) as { runId: string }).runId;
      const paid = async () => {
        const dump = JSON.parse(await dumpPg(db)) as Record<string, string[]>;
        return JSON.stringify({ attempts: dump.attempts, scorings: dump.scorings });
      };
      const before = await paid();
      writeFileSync(join(dir, "reviews.csv"), reviewsCsv());
      const imported = await cli(["review", pgRun, "--import", "reviews.csv", "--store", url], {
        STET_REVIEWER: "ada",
      });
      expect(imported.code, imported.stderr).toBe(0);
      expect(await paid()).toBe(before);
      const { rows } = await db.query<{ n: string }>("SELECT COUNT(*) AS n FROM reviews");
      expect(Number(rows[0]!.n)).toBe(20);
      const shown = await cli(["show", pgRun, "--store", url, "--json"]);
      const view = JSON.parse(shown.stdout) as { agreement: { rate: number }[] };
      expect(view.agreement[0]!.rate).toBe(0.9);
    },
  );
});
