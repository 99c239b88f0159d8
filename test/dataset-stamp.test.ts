import { readFileSync, utimesSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it, vi } from "vitest";
import { prepareStart, runEval } from "../src/runs/start-run.js";
import { planResume, resumeRun } from "../src/runs/resume-run.js";
import { findEval } from "../src/runs/find-eval.js";
import type { Store } from "../src/store/types.js";
import { bothStores } from "./helpers/both-stores.js";
import { perTest } from "./helpers/eval-project.js";

// A run records the stamp of the dataset file its snapshot was read from (the file's sha256):
// the resume of a complete run whose file still has it reads neither the dataset nor the
// snapshot (a 1,000,000-key file took seconds to parse and compare). Any other state of the run
// or the file is planned as before, from both.

const rows = (ids: string[], edited = "") =>
  ids
    .map(
      (id) =>
        JSON.stringify({ id, input: `q ${id}${id === "c" ? edited : ""}`, target: `q ${id}` }) +
        "\n",
    )
    .join("");

const evalText = (
  dataset = `"./data.jsonl"`,
  mapper = "",
) => `import { defineEval, scorers } from "stet";
export default defineEval({
  name: "stamped",
  dataset: ${dataset},
  ${mapper}
  solver: (sample) => sample.input,
  scorers: [scorers.exact()],
  concurrency: 2,
});
`;

const { project } = perTest();
const stores = bothStores();

async function started(store: Store, dir: string) {
  const prepared = await prepareStart({ eval: join(dir, "eval.mjs") });
  const report = await runEval({ store, ...prepared });
  return (await store.runs.get(report.runId))!;
}

/** Spies on the snapshot's reads: a plan made without them never looked at a sample. */
function snapshotReads(store: Store) {
  return [
    vi.spyOn(store.reads, "sampleFingerprintPages"),
    vi.spyOn(store.reads, "samplePages"),
    vi.spyOn(store.reads, "listAttemptHeads"),
  ];
}

describe.each(stores)("a dataset file's stamp (%s)", (_name, open, skip) => {
  it.skipIf(skip)(
    "a complete run with its file unchanged is planned without reading it; any change of content is still found",
    async () => {
      const store = await open();
      const ids = ["a", "b", "c", "d", "e"];
      const p = project({ "eval.mjs": evalText(), "data.jsonl": rows(ids) });
      const data = join(p.dir, "data.jsonl");
      const run = await started(store, p.dir);
      expect(run.status).toBe("completed");
      expect(run.config.datasetStamp).toMatch(/^1:[0-9a-f]{64}$/);

      // The same bytes, touched: the plan reads no sample and no attempt, and says what the
      // full plan says (the report of a resume given the eval, which always reads both).
      utimesSync(data, new Date(), new Date(Date.now() + 60_000));
      const reads = snapshotReads(store);
      const planning = await planResume({ store, runId: run.id });
      expect(planning.ok).toBe(false);
      if (planning.ok) return;
      expect(planning.refusal.reason).toBe("nothing-to-resume");
      for (const read of reads) expect(read).not.toHaveBeenCalled();
      const settled = await resumeRun({ store, runId: run.id });
      for (const read of reads) read.mockRestore();
      const ev = await findEval(run);
      const full = await resumeRun({ store, runId: run.id, eval: ev });
      expect({ ...settled, wallMs: 0 }).toEqual({ ...full, wallMs: 0 });
      expect(settled.plan).toMatchObject({ total: 5, preserved: 5, changed: [] });

      // One sample's content edited: found, as before.
      const original = readFileSync(data);
      writeFileSync(data, rows(ids, " (edited)"));
      const changed = await planResume({ store, runId: run.id });
      expect(changed.ok === false && changed.refusal.reason).toBe("changed-samples");

      // Re-run with its new content: the snapshot now holds it, which no stamp vouches for, so
      // the file's original bytes again are a change too (with the stamp kept, this resume would
      // have trusted the snapshot and found nothing to do).
      const rerun = await resumeRun({ store, runId: run.id, rerunChanged: true });
      expect(rerun.plan.changedKeys).toBe(1);
      const after = (await store.runs.get(run.id))!;
      expect(after.config.datasetStamp).toBeUndefined();
      writeFileSync(data, original);
      const reverted = await planResume({ store, runId: run.id });
      expect(reverted.ok === false && reverted.refusal.reason).toBe("changed-samples");
    },
  );

  it.skipIf(skip)("an interrupted run's resume reads the dataset, stamp or not", async () => {
    const store = await open();
    const p = project({ "eval.mjs": evalText(), "data.jsonl": rows(["a", "b", "c"]) });
    const prepared = await prepareStart({ eval: join(p.dir, "eval.mjs"), concurrency: 1 });
    const stop = new AbortController();
    const first = await runEval({
      store,
      ...prepared,
      signal: stop.signal,
      onEvent: (e) => {
        if (e.type === "attempt-committed") stop.abort();
      },
    });
    expect(first.status).toBe("interrupted");
    const pages = vi.spyOn(store.reads, "sampleFingerprintPages");
    const resumed = await resumeRun({ store, runId: first.runId });
    expect(pages).toHaveBeenCalled();
    expect(resumed.status).toBe("completed");
    expect(resumed.plan.preserved).toBeGreaterThanOrEqual(1);
  });
});

describe("which datasets are stamped", () => {
  it("a file read as it is; not one read through the eval's sample mapper, nor a dataset in code", async () => {
    const stamp = async (text: string) => {
      const p = project({ "eval.mjs": text, "data.jsonl": rows(["a", "b"]) });
      return (await prepareStart({ eval: join(p.dir, "eval.mjs") })).eval.datasetStamp;
    };
    expect(await stamp(evalText())).toMatch(/^1:[0-9a-f]{64}$/);
    const mapper = `sample: (row) => ({ id: row.id, input: row.input + "?", target: row.target }),`;
    expect(await stamp(evalText(`"./data.jsonl"`, mapper))).toBeUndefined();
    expect(await stamp(evalText(`[{ id: "a", input: "x", target: "x" }]`))).toBeUndefined();
  });
});
