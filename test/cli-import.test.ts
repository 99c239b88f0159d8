import { createHash } from "node:crypto";
import { constants } from "node:buffer";
import {
  existsSync,
  mkdirSync,
  readFileSync,
  symlinkSync,
  truncateSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildResultSet } from "../src/evalport/build-result-set.js";
import { newOwnerIdentity } from "../src/engine/owner.js";
import { openSqliteStore } from "../src/store/sqlite/index.js";
import { runCli } from "./helpers/cli.js";
import { dumpDb } from "./helpers/db-dump.js";
import { tempDir } from "./helpers/temp-store.js";

// `stet import` and `stet run --resume-from` through the real CLI (bin/stet.js runs dist/:
// `npm run build` first). The eval lives in a temp project with stet in its node_modules.
const REPO = fileURLToPath(new URL("../", import.meta.url));

const EVAL = `import { appendFileSync } from "node:fs";
import { defineEval } from "stet";
const failing = new Set((process.env.FAIL ?? "").split(",").filter(Boolean));
export default defineEval({
  name: "double",
  dataset: Array.from({ length: 10 }, (_, i) => ({ id: "q" + i, input: i + " + " + i, target: String(2 * i) })),
  solver: (sample) => {
    if (process.env.CALLS) appendFileSync(process.env.CALLS, sample.id + "\\n");
    if (failing.has(sample.id)) throw new Error("provider down");
    const n = Number(String(sample.input).split(" + ")[0]);
    return { output: String(2 * n), usage: { inputTokens: 10, outputTokens: 2, costUsd: 0.01 } };
  },
  scorers: [function exact({ sample, output }) { return output === sample.target; }],
});
`;

let dir: string;
let cleanup: () => void;
let evalFile: string;
/** A complete run's ResultSet and a partial run's one, as files. */
let backup: string;
let partial: string;
let backupText: string;

beforeAll(async () => {
  if (!existsSync(join(REPO, "dist/cli/bin.js"))) {
    throw new Error("these tests run bin/stet.js from dist/: run `npm run build` first");
  }
  ({ dir, cleanup } = tempDir());
  mkdirSync(join(dir, "node_modules"));
  symlinkSync(REPO, join(dir, "node_modules/stet"), "dir");
  evalFile = join(dir, "double.mjs");
  writeFileSync(evalFile, EVAL);
  const full = await cli(["run", evalFile, "--store", join(dir, "source.db"), "--json"]);
  const half = await cli(["run", evalFile, "--store", join(dir, "source.db"), "--json"], {
    FAIL: "q6,q7,q8,q9",
  });
  expect([full.code, half.code]).toEqual([0, 3]);
  const source = openSqliteStore(join(dir, "source.db"));
  try {
    backup = join(dir, "backup.json");
    backupText = JSON.stringify(await buildResultSet(source, runIdOf(full.stdout)), null, 2);
    writeFileSync(backup, backupText);
    partial = join(dir, "partial.json");
    writeFileSync(partial, JSON.stringify(await buildResultSet(source, runIdOf(half.stdout))));
  } finally {
    await source.close();
  }
});
afterAll(() => cleanup());

function cli(args: string[], env: NodeJS.ProcessEnv = {}) {
  return runCli(args, { cwd: dir, env });
}

function runIdOf(stdout: string): string {
  return (JSON.parse(stdout) as { runId: string }).runId;
}

let stores = 0;
/** A fresh store holding a run of the eval with q6–q9 errored. */
async function erroredRun(): Promise<{ store: string; runId: string }> {
  const store = join(dir, `target-${++stores}.db`);
  const run = await cli(["run", evalFile, "--store", store, "--json"], { FAIL: "q6,q7,q8,q9" });
  expect(run.code).toBe(3);
  return { store, runId: runIdOf(run.stdout) };
}

describe("stet import", () => {
  it("restores the missing keys once, and reports the imported cost (only) as reused", async () => {
    const { store, runId } = await erroredRun();
    const sha = createHash("sha256").update(readFileSync(backup)).digest("hex");
    const first = await cli(["import", backup, "--into", runId, "--sha256", sha, "--store", store]);
    expect(first.code, first.stderr).toBe(0);
    expect(first.stdout).toContain(`imported 4 result(s) into run ${runId}`);
    expect(first.stdout).toContain(`(sha256:${sha})`);
    expect(first.stdout).toContain("skipped 6 the run already had: q0, q1, q2, q3, q4 and 1 more");
    expect(first.stdout).toContain(`run ${runId}: completed, 10/10 keys scored`);

    const show = await cli(["show", runId, "--store", store, "--json"]);
    const shown = JSON.parse(show.stdout) as {
      status: string;
      usage: Record<"totalSpent" | "reused", { attempts: number; costUsd: number }>;
    };
    expect(shown.status).toBe("completed");
    expect(shown.usage.totalSpent.costUsd).toBeCloseTo(0.06);
    // Seen from `show`, what the run reused is what it imported: the 4 restored outcomes (paid
    // by the run the backup came from), not the 6 it had bought itself.
    expect(shown.usage.reused.attempts).toBe(4);
    expect(shown.usage.reused.costUsd).toBeCloseTo(0.04);

    const before = dumpDb(store);
    const again = await cli(["import", backup, "--into", runId, "--store", store, "--json"]);
    expect(again.code).toBe(0);
    expect(JSON.parse(again.stdout)).toMatchObject({ imported: [], status: "completed" });
    expect(dumpDb(store)).toBe(before);
  });

  it("refuses a wrong --sha256 with exit 1 and leaves the store as it was", async () => {
    const { store, runId } = await erroredRun();
    const before = dumpDb(store);
    const wrong = "ab".repeat(32);
    const result = await cli([
      "import",
      backup,
      "--into",
      runId,
      "--sha256",
      wrong,
      "--store",
      store,
    ]);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/sha256 mismatch for .*backup\.json: expected (ab){32}/);
    expect(dumpDb(store)).toBe(before);
  });

  it("refuses the rows `stet export --format jsonl` wrote, saying what to import instead", async () => {
    const { store, runId } = await erroredRun();
    const rows = join(dir, `rows-${runId}.jsonl`);
    const exported = await cli(["export", runId, "-o", rows, "--store", store]);
    expect(exported.code, exported.stderr).toBe(0);
    const before = dumpDb(store);
    const result = await cli(["import", rows, "--into", runId, "--store", store]);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(`${rows}:1 is a row of \`stet export --format jsonl\``);
    expect(result.stderr).toContain("export the run with `--format resultset`");
    expect(result.stderr).not.toMatch(/\n\s+at /);
    expect(dumpDb(store)).toBe(before);
  });

  it("refuses a ResultSet too long to read whole with exit 1, no stack trace, the store as it was", async () => {
    const { store, runId } = await erroredRun();
    // Sparse: one byte longer than one string can be, on no disk.
    const big = join(dir, "too-long.json");
    writeFileSync(big, "");
    truncateSync(big, constants.MAX_STRING_LENGTH + 1);
    const before = dumpDb(store);
    const result = await cli(["import", big, "--into", runId, "--store", store]);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(`${big} is 512 MiB: a ResultSet is read as one text`);
    expect(result.stderr).toContain("import the run's Results JSONL (`stet run --output`)");
    expect(result.stderr).not.toMatch(/unexpected error|\n\s+at /);
    expect(dumpDb(store)).toBe(before);
  });

  it("names a wrong run id before reading the file", async () => {
    const { store } = await erroredRun();
    const result = await cli([
      "import",
      join(dir, "absent.json"),
      "--into",
      "r_nope",
      "--store",
      store,
    ]);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('no run with id "r_nope"');
    expect(result.stderr).not.toContain("absent.json");
  });

  type Doc = {
    results: Array<Record<string, unknown> & { grader_results: Array<{ score: unknown }> }>;
  };
  const edit = (change: (doc: Doc) => void) => () => {
    const doc = JSON.parse(backupText) as Doc;
    change(doc);
    return ["backup-edited.json", JSON.stringify(doc, null, 2)] as const;
  };
  it.each([
    [
      "truncated JSON",
      () => ["truncated.json", backupText.slice(0, 400)] as const,
      /truncated\.json:\d+:\d+: not valid JSON: .*\[json\.syntax\]/,
    ],
    [
      "a JSONL line that is not JSON",
      () =>
        [
          "results.jsonl",
          '{"test_case_id":"q1","passed":true,"grader_results":[]}\n{"test_case_id": "q2",\n',
        ] as const,
      /results\.jsonl:2:\d+: line 2 is not JSON/,
    ],
    [
      "a Result without test_case_id",
      edit((doc) => delete doc.results[0]!.test_case_id),
      /backup-edited\.json: \/results\/0\/test_case_id: must have required property 'test_case_id' \[schema\.required\]/,
    ],
    [
      "a score of 1.5",
      edit((doc) => (doc.results[0]!.grader_results[0]!.score = 1.5)),
      /\/results\/0\/grader_results\/0\/score: must be <= 1, got 1\.5 \[schema\.maximum\]/,
    ],
    [
      "a date without offset",
      edit((doc) => (doc.results[0]!.completed_at = "2026-01-15T10:00:00")),
      /\/results\/0\/completed_at: must be an RFC 3339 date-time with a UTC offset.*\[schema\.format\]/,
    ],
  ])("refuses %s with its path or line, exit 1, store unchanged", async (_, make, message) => {
    const { store, runId } = await erroredRun();
    const [name, text] = make();
    const file = join(dir, name);
    writeFileSync(file, text);
    const before = dumpDb(store);
    const result = await cli(["import", file, "--into", runId, "--store", store]);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(message);
    expect(result.stderr).toContain("nothing was imported");
    expect(readFileSync(file, "utf8")).toBe(text);
    expect(dumpDb(store)).toBe(before);
  });

  it("exits 5 while a live process owns the run", async () => {
    const store = join(dir, "owned.db");
    const s = openSqliteStore(store);
    const source = openSqliteStore(join(dir, "source.db"));
    try {
      const [listing] = await source.reads.listRuns({ limit: 1 });
      const run = listing!.run;
      // Owned by this test process: alive, on this host.
      await s.runs.create({
        id: "r_owned",
        config: run.config,
        samples: await source.reads.getSamples(run.id),
        owner: newOwnerIdentity(),
      });
    } finally {
      await Promise.all([s.close(), source.close()]);
    }
    const before = dumpDb(store);
    const result = await cli(["import", backup, "--into", "r_owned", "--store", store]);
    expect(result.code).toBe(5);
    expect(result.stderr).toMatch(
      /run r_owned is being executed by pid \d+ on .*; stet cancel r_owned stops it\n$/,
    );
    expect(dumpDb(store)).toBe(before);
  });
});

describe("stet run --resume-from", () => {
  it("seeds the new run from a partial ResultSet and executes only the rest", async () => {
    const store = join(dir, "seeded.db");
    const calls = join(dir, "calls.log");
    const result = await cli(
      ["run", evalFile, "--resume-from", partial, "--store", store, "--json"],
      { CALLS: calls },
    );
    expect(result.code, result.stderr).toBe(0);
    expect(JSON.parse(result.stdout)).toMatchObject({
      status: "completed",
      preserved: 6,
      executed: 4,
      usage: { spentNow: { attempts: 4 }, reused: { attempts: 6 } },
    });
    expect(readFileSync(calls, "utf8").trim().split("\n").sort()).toEqual(["q6", "q7", "q8", "q9"]);
  });

  it("with --run-id of an existing run: goes on with the run the file seeded, refuses one it did not", async () => {
    const store = join(dir, "seeded-id.db");
    const calls = join(dir, "calls-id.log");
    const args = ["run", evalFile, "--resume-from", partial, "--store", store, "--json"];
    // The same command again: the run the file seeded is complete, nothing is executed.
    expect((await cli([...args, "--run-id", "seeded"], { CALLS: calls })).code).toBe(0);
    const again = await cli([...args, "--run-id", "seeded"], { CALLS: calls });
    expect(again.code, again.stderr).toBe(0);
    expect(readFileSync(calls, "utf8").trim().split("\n")).toHaveLength(4);

    // A run started without it: resuming it would buy again what the file holds.
    const plain = await cli(["run", evalFile, "--store", store, "--run-id", "plain", "--json"], {
      FAIL: "q1,q2",
    });
    expect(plain.code, plain.stderr).toBe(3);
    const refused = await cli([...args, "--run-id", "plain"], { CALLS: calls });
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain(
      "--run-id plain names an existing run that was not seeded from",
    );
    expect(refused.stderr).toContain(`stet import ${partial} --into plain`);
    expect(readFileSync(calls, "utf8").trim().split("\n")).toHaveLength(4); // nothing executed
  });

  it("refuses a malformed file before creating a run", async () => {
    const store = join(dir, "never.db");
    const bad = join(dir, "bad-partial.json");
    writeFileSync(bad, readFileSync(partial, "utf8").slice(0, 100));
    const result = await cli(["run", evalFile, "--resume-from", bad, "--store", store]);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/bad-partial\.json:1:\d+: not valid JSON/);
    expect(existsSync(store)).toBe(false);
  });
});
