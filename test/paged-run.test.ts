import { join } from "node:path";
import { describe, expect, it } from "vitest";
import type { RunEvent } from "../src/core/events.js";
import { resumeRun } from "../src/runs/resume-run.js";
import { prepareStart, runEval } from "../src/runs/start-run.js";
import type { Store } from "../src/store/types.js";
import { bothStores } from "./helpers/both-stores.js";
import { comparableAttempts, interruptedPagedRun } from "./helpers/paged-runs.js";
import { perTest } from "./helpers/eval-project.js";
import { watchedReads } from "./helpers/watched-reads.js";

// A new run of a large dataset file is created from the file's pages and executes from its
// snapshot's pages (issue 34: `stet run` in flat memory): no process holds the dataset or a list
// of its keys. `prepareStart`'s `paged` asks for it (`stet run` does for files of 8 MiB and up);
// `minBytes: 0` here makes a small file take that way. What it stores must be what the whole
// load stores; what is wrong with the file refuses the run as the whole load does, leaving none.

const N = 1_300; // more than two of the snapshot's pages (512 keys)

const row = (i: number) => JSON.stringify({ id: `s${i}`, input: i, target: String(i * 2) });
const rows = (n: number) => Array.from({ length: n }, (_, i) => row(i)).join("\n") + "\n";

const EVAL = `import { defineEval, scorers } from "stet";
export default defineEval({
  name: "paged",
  dataset: "./data.jsonl",
  solver: (sample, ctx) => ({
    output: sample.input % 7 === 0 && ctx.epoch === 1 ? "wrong" : String(sample.input * 2),
    usage: { inputTokens: 3, outputTokens: 1, costUsd: 0.001 },
  }),
  scorers: [scorers.exact()],
  epochs: 2,
  concurrency: 8,
});
`;

const { project } = perTest();
const stores = bothStores();

/** What a run stored, without what differs between two runs of the same eval (ids, times). */
async function stored(store: Store, runId: string) {
  const run = (await store.runs.get(runId))!;
  const attempts = await comparableAttempts(store, runId);
  return {
    status: run.status,
    sampleCount: run.sampleCount,
    stamp: run.config.datasetStamp,
    samples: await store.reads.getSamples(runId),
    attempts,
    counts: await store.reads.countKeys(runId),
  };
}

describe.each(stores)("a run created and executed a page at a time (%s)", (_name, open, skip) => {
  it.skipIf(skip)(
    "stores what the whole load stores, reports the same figures, and executes in sample id order",
    async () => {
      const p = project({ "eval.mjs": EVAL, "data.jsonl": rows(N) });
      const file = join(p.dir, "eval.mjs");
      const paged = await prepareStart({ eval: file, paged: { minBytes: 0 }, concurrency: 1 });
      expect(paged.eval.pages).toBeDefined();
      expect(paged.eval.samples).toHaveLength(0); // nothing of the dataset held
      const whole = await prepareStart({
        eval: file,
        paged: { minBytes: 1 << 30 },
        concurrency: 1,
      });
      expect(whole.eval.pages).toBeUndefined();
      expect(whole.eval.samples).toHaveLength(N);

      const [a, b] = [await open(), await open()];
      const order: string[] = [];
      const events: RunEvent[] = [];
      const watch = watchedReads(a);
      const pagedReport = await runEval({
        store: watch.store,
        ...paged,
        onEvent: (e) => {
          events.push(e);
          if (e.type === "attempt-committed")
            order.push(`${e.attempt.epoch}:${e.attempt.sampleId}`);
        },
      });
      const wholeReport = await runEval({ store: b, ...whole });

      expect(await stored(a, pagedReport.runId)).toEqual(await stored(b, wholeReport.runId));
      // No key's journal is read: nobody else can have begun a key of a new run.
      expect(watch.calls.filter((c) => c.startsWith("journal."))).toEqual([]);
      const figures = (r: typeof pagedReport) => ({ ...r, runId: "", wallMs: 0, startedAt: "" });
      expect(figures(pagedReport)).toEqual(figures(wholeReport));
      expect(pagedReport.plan).toMatchObject({ total: 2 * N, preserved: 0, toExecute: 2 * N });
      const started = events.find((e) => e.type === "run-started");
      expect(started?.type === "run-started" && started.plan.toExecute).toBe(2 * N);

      // Epoch by epoch, each in the snapshot's order (sample ids in byte order).
      const ids = Array.from({ length: N }, (_, i) => `s${i}`).sort();
      expect(order).toEqual([...ids.map((id) => `1:${id}`), ...ids.map((id) => `2:${id}`)]);
    },
  );

  it.skipIf(skip)(
    "an interrupted paged run resumes to one attempt a key, executing only what was left",
    async () => {
      const store = await open();
      const p = project({ "eval.mjs": EVAL, "data.jsonl": rows(N) });
      const runId = await interruptedPagedRun(store, p.dir, 700);
      const before = (await store.reads.listAttempts(runId)).length;
      expect(before).toBeGreaterThanOrEqual(700);
      expect(before).toBeLessThan(2 * N);

      const resumed = await resumeRun({ store, runId });
      expect(resumed.status).toBe("completed");
      expect(resumed.plan.preserved).toBe(before);
      const attempts = await store.reads.listAttempts(runId);
      expect(attempts).toHaveLength(2 * N); // no key executed twice
      expect(new Set(attempts.map((a) => `${a.sampleId}#${a.epoch}`)).size).toBe(2 * N);
    },
  );

  it.skipIf(skip)(
    "a bad row or a repeated id anywhere in the file refuses the run as loading it whole does, and no run is left",
    async () => {
      const store = await open();
      const refusal = async (text: string) => {
        const p = project({ "eval.mjs": EVAL, "data.jsonl": text });
        const prepared = await prepareStart({
          eval: join(p.dir, "eval.mjs"),
          paged: { minBytes: 0 },
        });
        const error = await runEval({ store, ...prepared }).then(
          () => undefined,
          (e: unknown) => e as { code?: string; message: string },
        );
        // The whole load refuses the same file with the same error, before any run exists.
        const whole = await prepareStart({ eval: join(p.dir, "eval.mjs") }).then(
          () => undefined,
          (e: unknown) => e as { code?: string; message: string },
        );
        expect(error?.code).toBe(whole?.code);
        expect(error?.message).toContain(join(p.dir, "data.jsonl"));
        expect(await store.reads.listRuns()).toEqual([]);
        return error!.message;
      };

      // Invalid JSON on the last line of a file of several pages.
      const bad = await refusal(rows(N) + "{not json}\n");
      expect(bad).toContain(`data.jsonl:${N + 1}: invalid JSON`);

      // A repeated id pages after its first row: both rows named.
      const repeated = rows(N) + row(3) + "\n";
      const duplicate = await refusal(repeated);
      expect(duplicate).toMatch(
        new RegExp(`duplicate sample id "s3": .*data\\.jsonl:4 and .*data\\.jsonl:${N + 1}`),
      );

      // A file of no samples.
      expect(await refusal("\n")).toContain("no samples in");
    },
  );

  it.skipIf(skip)("reuse and a distributed start load a paged dataset whole", async () => {
    const store = await open();
    const p = project({ "eval.mjs": EVAL, "data.jsonl": rows(40) });
    const file = join(p.dir, "eval.mjs");
    const first = await runEval({ store, ...(await prepareStart({ eval: file })) });
    const prepared = await prepareStart({ eval: file, paged: { minBytes: 0 } });
    expect(prepared.eval.pages).toBeDefined();
    // Library callers may ask for reuse with a paged eval: it plans against the whole dataset.
    const reused = await runEval({ store, ...prepared, runId: "reusing", reuse: first.runId });
    expect(reused.status).toBe("completed");
    const attempts = await store.reads.listAttempts("reusing");
    expect(attempts).toHaveLength(80);
    expect(attempts.every((a) => a.provenance?.kind === "imported")).toBe(true);
  });
});
