import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { importResults } from "../src/runs/import-into-run.js";
import { prepareStart, startDistributed } from "../src/runs/start-run.js";
import { workRun } from "../src/runs/work-run.js";
import { bothStores } from "./helpers/both-stores.js";
import { runCli } from "./helpers/cli.js";
import { perTest } from "./helpers/eval-project.js";
import { callsOf, failingEval, pagedRows, stopAfter } from "./helpers/paged-runs.js";

// `stet import <file> --into <run>` of a distributed run records completed results as an owner,
// which ends no lease: before, the resume that reopened the run handed the imported keys' leases
// to its worker, which executed them again (buying them twice) and whose commit was refused ("…
// already has a scored attempt; nothing of the batch was recorded"), failing the resume. A
// reopen now ends the lease of every key with a scored attempt.

const N = 60;

const EVAL = failingEval("distributed-import", 2).replace(
  "solver: async (sample, ctx) => {",
  `solver: async (sample, ctx) => {
    (await import("node:fs")).appendFileSync(new URL("./calls.log", import.meta.url), sample.id + "#" + ctx.epoch + "\\n");`,
);

const { project } = perTest();

describe.each(bothStores())("an import into a distributed run (%s)", (_n, open, skip) => {
  it.skipIf(skip)(
    "is not executed again by the resume that reopens the run: each key once",
    async () => {
      const p = project({ "eval.mjs": EVAL, "data.jsonl": pagedRows(N) });
      const store = await open();
      const prepared = await prepareStart({ eval: join(p.dir, "eval.mjs") });
      const first = await startDistributed({ store, ...prepared, ...stopAfter(20) });
      expect(first.status).toBe("interrupted");
      const executed = new Set(callsOf(p.dir));

      // Results of the first 40 samples, made elsewhere: some of them the run never started.
      const args = ["run", "eval.mjs", "--limit", "40", "--output", "partial.jsonl"];
      const source = await runCli([...args, "--store", "other.db"], { cwd: p.dir });
      expect(source.code, source.stderr).toBe(0);
      callsOf(p.dir);
      const imported = await importResults({
        store,
        runId: first.runId,
        file: join(p.dir, "partial.jsonl"),
      });
      expect(imported.imported.length).toBeGreaterThan(0);
      const stored = new Set(
        (await store.reads.listAttemptHeads(first.runId)).map((h) => `${h.sampleId}#${h.epoch}`),
      );

      const resumed = await workRun({ store, runId: first.runId, reopen: true });
      expect(resumed.status).toBe("completed");
      const heads = await store.reads.listAttemptHeads(first.runId);
      expect(heads).toHaveLength(2 * N); // one attempt a key
      // Executed now: only the keys neither executed before nor imported.
      const now = callsOf(p.dir);
      expect(now.filter((k) => stored.has(k))).toEqual([]);
      expect(now).toHaveLength(2 * N - stored.size);
      expect([...executed].filter((k) => now.includes(k))).toEqual([]);
    },
  );
});
