import { unlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { isStetError } from "../src/core/errors.js";
import { prepareStart, runEval, startDistributed } from "../src/runs/start-run.js";
import type { Store } from "../src/store/types.js";
import { bothStores } from "./helpers/both-stores.js";
import { runCli } from "./helpers/cli.js";
import { perTest } from "./helpers/eval-project.js";
import { callsOf, comparableAttempts, failingEval, pagedRows } from "./helpers/paged-runs.js";
import { WHOLE_READS, watchedReads } from "./helpers/watched-reads.js";

// `stet run --resume-from partial.jsonl` of a large dataset file (issue 34: flat memory): the run
// is created from the file's pages and executes from its snapshot's, as a run without a seed
// does; the dataset is read through once beforehand for the samples the seed names (what the
// seed's check needs of it), so the seed is held and the dataset is not. `minBytes: 0` makes a
// small file take that way; what it stores and reports must be what the whole load does.

const N = 1_300; // more than two of the snapshot's pages (512 samples)

const { project } = perTest();
const stores = bothStores();

/**
 * Writes `partial.jsonl` in `dir`: the Results of a run of the eval's first `limit` samples (its
 * own store), which exits `code` (3 when some keys ended in error).
 */
async function seedFile(dir: string, limit: number, code: number): Promise<void> {
  const args = ["run", "eval.mjs", "--limit", String(limit), "--output", "partial.jsonl"];
  const source = await runCli([...args, "--store", "seed.db"], { cwd: dir });
  expect(source.code, source.stderr).toBe(code);
}

/** `failingEval`'s solver, also logging each call (`calls.log`). */
const EVAL = failingEval("paged-seed", 8).replace(
  "solver: async (sample, ctx) => {",
  `solver: async (sample, ctx) => {
    (await import("node:fs")).appendFileSync(new URL("./calls.log", import.meta.url), sample.id + "#" + ctx.epoch + "\\n");`,
);

/** A run's stored outcome, with the seed's provenance as `<seed>` (its path differs by test). */
async function stored(store: Store, runId: string) {
  const run = (await store.runs.get(runId))!;
  return {
    status: run.status,
    attempts: await comparableAttempts(store, runId, (p) => p.replace(/sha256:\w+/, "<seed>")),
    counts: await store.reads.countKeys(runId),
  };
}

describe.each(stores)("--resume-from of a dataset read a page at a time (%s)", (_n, open, skip) => {
  it.skipIf(skip)(
    "creates the run from the file's pages, seeds it, and executes and reports what the whole load does",
    async () => {
      const p = project({ "eval.mjs": EVAL, "data.jsonl": pagedRows(N), fail: "" });
      // The seed: the Results of the first 600 samples, every 13th an error (not completed).
      await seedFile(p.dir, 600, 3);
      unlinkSync(join(p.dir, "fail"));
      callsOf(p.dir);

      const ask = { eval: join(p.dir, "eval.mjs"), resumeFrom: join(p.dir, "partial.jsonl") };
      const paged = await prepareStart({ ...ask, paged: { minBytes: 0 } });
      expect(paged.eval.pages).toBeDefined();
      expect(paged.eval.samples).toHaveLength(0);
      expect(paged.seed!.length).toBeGreaterThan(1_000);
      const whole = await prepareStart({ ...ask, paged: { minBytes: 1 << 30 } });
      expect(whole.eval.pages).toBeUndefined();
      expect(whole.seed).toEqual(paged.seed);

      const [a, b] = [await open(), await open()];
      // The snapshot is written from the file's pages (not from a list of its samples).
      const watch = watchedReads(a);
      const created: boolean[] = [];
      const create = a.runs.create.bind(a.runs);
      const runs = Object.assign(Object.create(a.runs) as Store["runs"], {
        create: (run: Parameters<Store["runs"]["create"]>[0]) => {
          created.push(Array.isArray(run.samples));
          return create(run);
        },
      });
      const store = Object.assign(Object.create(watch.store) as Store, { runs });
      const reportA = await runEval({ store, ...paged });
      const executedA = callsOf(p.dir);
      const reportB = await runEval({ store: b, ...whole });
      const executedB = callsOf(p.dir);
      expect(created).toEqual([false]);
      expect(watch.calls.filter((c) => WHOLE_READS.includes(c))).toEqual([]);

      expect(reportA.status).toBe("completed");
      expect(await stored(a, reportA.runId)).toEqual(await stored(b, reportB.runId));
      // Only what the seed did not complete executed, each key once, the same keys both ways.
      expect(executedA).toEqual(executedB);
      expect(executedA).toHaveLength(2 * N - paged.seed!.length);
      const figures = (r: typeof reportA) => ({ ...r, runId: "", wallMs: 0, startedAt: "" });
      expect(figures(reportA)).toEqual(figures(reportB));
      expect(reportA.plan).toMatchObject({ total: 2 * N, preserved: paged.seed!.length });
      const imported = (await a.reads.listAttemptHeads(reportA.runId)).filter(
        (h) => h.provenance.kind === "imported",
      );
      expect(imported).toHaveLength(paged.seed!.length);
    },
  );

  it.skipIf(skip)(
    "a distributed start (--distributed --resume-from): its workers execute only what the seed left, paged as whole",
    async () => {
      const p = project({ "eval.mjs": EVAL, "data.jsonl": pagedRows(N) });
      await seedFile(p.dir, 600, 0);
      callsOf(p.dir);
      const ask = { eval: join(p.dir, "eval.mjs"), resumeFrom: join(p.dir, "partial.jsonl") };
      const paged = await prepareStart({ ...ask, paged: { minBytes: 0 } });
      const whole = await prepareStart({ ...ask, paged: { minBytes: 1 << 30 } });
      const [a, b] = [await open(), await open()];
      const watch = watchedReads(a);
      // Before, the seeded keys' leases were handed out: a worker executed one and its commit was
      // refused ("already has a scored attempt"), failing the run.
      const reportA = await startDistributed({ store: watch.store, ...paged });
      const executedA = callsOf(p.dir);
      const reportB = await startDistributed({ store: b, ...whole });
      const executedB = callsOf(p.dir);
      expect(reportA.status).toBe("completed");
      expect(executedA).toHaveLength(2 * N - 1_200);
      expect(executedA.some((k) => Number(k.slice(1, k.indexOf("#"))) < 600)).toBe(false);
      expect(executedB).toEqual(executedA);
      expect(await stored(a, reportA.runId)).toEqual(await stored(b, reportB.runId));
      const figures = (r: typeof reportA) => ({ ...r, runId: "", wallMs: 0, startedAt: "" });
      expect(figures(reportA)).toEqual(figures(reportB));
      expect(watch.calls.filter((c) => WHOLE_READS.includes(c))).toEqual([]);
    },
  );

  it.skipIf(skip)(
    "a seed naming a sample the paged dataset lacks is refused before the run exists",
    async () => {
      const p = project({ "eval.mjs": EVAL, "data.jsonl": pagedRows(N) });
      await seedFile(p.dir, 40, 0);
      // s7's row gone from the dataset: the seed names a sample the new run does not have.
      const rows = pagedRows(N)
        .split("\n")
        .filter((line) => !line.includes('"id":"s7"'));
      writeFileSync(join(p.dir, "data.jsonl"), rows.join("\n"));
      const ask = { eval: join(p.dir, "eval.mjs"), resumeFrom: join(p.dir, "partial.jsonl") };
      const refused = await Promise.all(
        [0, 1 << 30].map((minBytes) =>
          prepareStart({ ...ask, paged: { minBytes } }).catch((e: unknown) => e),
        ),
      );
      for (const error of refused) {
        expect(isStetError(error, "E_INVALID_INPUT"), String(error)).toBe(true);
        expect((error as Error).message).toContain('not samples of the run: "s7"');
      }
      expect((refused[0] as Error).message).toBe((refused[1] as Error).message);
      const store = await open();
      expect(await store.reads.listRuns()).toEqual([]);
    },
  );
});
