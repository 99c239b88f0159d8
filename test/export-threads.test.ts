import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { isStetError } from "../src/core/errors.js";
import { writeRows } from "../src/cli/parallel-export.js";
import { openSqliteStore } from "../src/store/sqlite/index.js";
import type { Store } from "../src/store/types.js";
import { runCli } from "./helpers/cli.js";
import { perTest } from "./helpers/eval-project.js";
import { SKIP_POSTGRES, testSchemaPool } from "./helpers/postgres.js";

// `stet export --threads`: JSON lines and CSV read by several threads, each a part of the run
// (2,000 samples, cut at the store's own sample ids), written in order by the command's thread.
// It must write the same bytes as one thread, with every kind of outcome a page can hold: errors,
// step journals, reviews, two epochs, samples whose ids sort differently by bytes than by UTF-16.

const SAMPLES = 4_500;
const { project } = perTest();

// Ids in several scripts, so a part's edge falls between ids JavaScript would order otherwise.
const EVAL = `import { defineEval, scorers } from "stet";
const names = ["a", "B", "é", "\\u{1F600}", "z"];
export default defineEval({
  name: "threads",
  dataset: Array.from({ length: ${SAMPLES} }, (_, i) => ({
    id: names[i % 5] + String(i).padStart(5, "0"),
    input: "q" + i,
    target: i % 3 === 0 ? "no" : "q" + i,
  })),
  epochs: 2,
  retries: 0,
  solver: async (sample, ctx) => {
    const i = Number(sample.id.replace(/^\\D+/u, ""));
    if (i % 11 === 0 && ctx.epoch === 2) throw new Error("broken " + i);
    if (i % 7 === 0) return ctx.step("look", { i }, async () => sample.input);
    return sample.input;
  },
  scorers: [scorers.exact()],
});
`;

/** A finished run of the eval (on `store` when given), with a few keys reviewed. */
async function reviewedRun(store?: string) {
  const { dir } = project({ "eval.mjs": EVAL });
  const at = store === undefined ? [] : ["--store", store];
  const run = await runCli(["run", "eval.mjs", "--json", ...at], { cwd: dir });
  expect(run.code, run.stderr).toBe(3); // errored keys
  const { runId } = JSON.parse(run.stdout) as { runId: string };
  const reviewed = ["a00000", "é02002", "z04004", "\u{1F600}04498"];
  writeFileSync(
    join(dir, "reviews.csv"),
    `sample_id,epoch,verdict\n${reviewed.map((id, i) => `${id},1,${i % 2 ? "pass" : "fail"}`).join("\n")}\n`,
  );
  const review = await runCli(
    ["review", runId, "--import", "reviews.csv", "--reviewer", "ann", ...at],
    { cwd: dir },
  );
  expect(review.code, review.stderr).toBe(0);
  return { dir, runId, at };
}

async function exported(dir: string, args: string[]): Promise<string> {
  const result = await runCli(["export", ...args], { cwd: dir });
  expect(result.code, result.stderr).toBe(0);
  return result.stdout;
}

describe.each([
  ["sqlite", false],
  ["postgres", SKIP_POSTGRES],
] as const)("stet export --threads (%s)", (name, skip) => {
  it.skipIf(skip)(
    "writes the same JSON lines and CSV with 1, 2 and 3 threads, to stdout and to a file",
    async () => {
      const { dir, runId, at } = await reviewedRun(
        name === "postgres" ? testSchemaPool().url : undefined,
      );
      const one = await exported(dir, [runId, "--threads", "1", ...at]);
      const lines = one.trimEnd().split("\n");
      expect(lines).toHaveLength(SAMPLES * 2);
      const rows = lines.map((line) => JSON.parse(line) as Record<string, unknown>);
      // Every kind of row is there: errors, journals, reviews.
      expect(rows.filter((r) => r.status === "error")).toHaveLength(Math.ceil(SAMPLES / 11));
      expect(rows.filter((r) => r.journal !== undefined).length).toBeGreaterThan(1_000);
      expect(rows.filter((r) => r.reviews !== undefined)).toHaveLength(4);
      for (const threads of ["2", "3"]) {
        expect(await exported(dir, [runId, "--threads", threads, ...at])).toBe(one);
      }
      await exported(dir, [runId, "--threads", "3", "-o", "out.jsonl", ...at]);
      expect(readFileSync(join(dir, "out.jsonl"), "utf8")).toBe(one);
      const csv = await exported(dir, [runId, "--format", "csv", "--threads", "1", ...at]);
      expect(csv.split("\n")[0]).toMatch(/,human,reviewers$/);
      expect(await exported(dir, [runId, "--format", "csv", "--threads", "2", ...at])).toBe(csv);
    },
    180_000,
  );
});

/** A store whose reads of the run's attempt and snapshot pages are recorded, not changed. */
function recorded(store: Store): { store: Store; reads: string[] } {
  const reads: string[] = [];
  const paged = new Set([
    "attemptPages",
    "attemptHeadPages",
    "samplePages",
    "sampleFingerprintPages",
  ]);
  const readModel = new Proxy(store.reads, {
    get(target, name, receiver) {
      const value = Reflect.get(target, name, receiver) as unknown;
      if (typeof name !== "string" || !paged.has(name) || typeof value !== "function") {
        return value;
      }
      return (...args: unknown[]) => {
        reads.push(name);
        return (value as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
  return { store: { ...store, reads: readModel } as Store, reads };
}

describe("writeRows", () => {
  it("leaves every page to the reader threads, which read what one thread reads", async () => {
    const { dir, runId } = await reviewedRun();
    const opened = await openSqliteStore(join(dir, ".stet/stet.db"), { create: false });
    try {
      const run = (await opened.runs.get(runId))!;
      const write = async (pieces: string[], threads: number, storeFlag?: string) => {
        const { store, reads } = recorded(opened);
        await writeRows(store, run, { name: "jsonl" }, async (piece) => void pieces.push(piece), {
          threads,
          storeFlag: storeFlag ?? join(dir, ".stet/stet.db"),
        });
        return reads;
      };
      const alone: string[] = [];
      expect(await write(alone, 1)).toEqual(["attemptPages", "sampleFingerprintPages"]);
      // Three parts (2,000, 2,000 and 500 samples), all read by the threads: none here.
      const parallel: string[] = [];
      expect(await write(parallel, 2)).toEqual([]);
      expect(parallel.join("")).toBe(alone.join(""));
      // A reader that cannot open the store fails the export with the store's own error.
      const failed = await write([], 2, join(dir, "missing.db")).then(
        () => undefined,
        (error: unknown) => error,
      );
      expect(isStetError(failed, "E_STORE")).toBe(true);
      expect((failed as Error).message).toContain("missing.db");
    } finally {
      await opened.close();
    }
  }, 120_000);
});
