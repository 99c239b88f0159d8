import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { planStart } from "../src/runs/plan-start.js";
import { resumeRun } from "../src/runs/resume-run.js";
import { prepareStart, runEval } from "../src/runs/start-run.js";
import type { Store } from "../src/store/types.js";
import { bothStores } from "./helpers/both-stores.js";
import { perTest } from "./helpers/eval-project.js";
import { callsOf, comparableAttempts, stopAfter } from "./helpers/paged-runs.js";
import { WHOLE_READS, watchedReads } from "./helpers/watched-reads.js";

// `stet run --reuse` and `stet plan --reuse` of a large dataset file (issue 34: flat memory):
// the reuse is planned a page of the file at a time, each page's samples looked up in the source
// by id, and the picked attempts are found again in the store a page of the source at a time, so
// neither the dataset, a list of its keys nor the source's attempts are held. `minBytes: 0`
// makes a small file take that way; what it plans, stores and reports must be what the whole
// load does, and no key the source paid for is executed again.

// More than one of the snapshot's pages (512); its 1,400 keys are two of the source's (1,000).
const N = 700;

/** The source's dataset, and the new one: every 31st sample changed, every 43rd gone, 25 added. */
const before = (i: number) => ({ id: `s${i}`, input: i, target: String(i * 2) });
const after = (i: number) =>
  i % 31 === 0 ? { ...before(i), input: i, target: String(i * 2 + 1) } : before(i);
const jsonl = (rows: object[]) => rows.map((r) => JSON.stringify(r)).join("\n") + "\n";
const sourceRows = () => Array.from({ length: N }, (_, i) => before(i));
const newRows = () => [
  ...Array.from({ length: N }, (_, i) => after(i)).filter((_, i) => i % 43 !== 1),
  ...Array.from({ length: 25 }, (_, i) => before(N + i)),
];

/**
 * Epoch 2 of every 9th sample fails (an error is never reused); every 7th answers wrong in epoch
 * 1 (scored 0: reused). Each key journals a step; `scorers` may add one (`rescore`).
 */
const evalSource = (scorers: string) => `import { appendFileSync } from "node:fs";
import { defineEval, scorers } from "stet";
export default defineEval({
  name: "paged-reuse",
  dataset: "./data.jsonl",
  solver: async (sample, ctx) => {
    appendFileSync(new URL("./calls.log", import.meta.url), sample.id + "#" + ctx.epoch + "\\n");
    const doubled = await ctx.step("double", { n: sample.input }, async () => sample.input * 2);
    if (sample.input % 9 === 0 && ctx.epoch === 2 && !process.env.HEALED) throw new Error("flaky");
    return {
      output: sample.input % 7 === 0 && ctx.epoch === 1 ? "wrong" : String(doubled),
      usage: { inputTokens: 3, outputTokens: 1, costUsd: 0.001 },
    };
  },
  scorers: [${scorers}],
  epochs: 2,
  concurrency: 8,
  retries: 0,
});
`;

const { project } = perTest();
const stores = bothStores();

/** What a new run stored, with the source's id as `<source>` (the two stores' differ). */
async function stored(store: Store, runId: string, sourceId: string) {
  const run = (await store.runs.get(runId))!;
  const bare = (s: string) => s.split(sourceId).join("<source>");
  const attempts = await comparableAttempts(store, runId, bare);
  const journal = (await store.journal.list(runId)).map((e) =>
    [e.sampleId, e.epoch, e.attempt, e.step, e.name, JSON.stringify(e.result)].join(" "),
  );
  const reuse = run.config.reuse;
  return {
    status: run.status,
    reuse: reuse && { ...reuse, source: reuse.source && bare(reuse.source) },
    attempts,
    journal,
    counts: await store.reads.countKeys(runId),
  };
}

describe.each(stores)("--reuse of a dataset read a page at a time (%s)", (_name, open, skip) => {
  it.skipIf(skip)(
    "plans, seeds, executes and reports what the whole load does, reading the source by page",
    async () => {
      const p = project({ "eval.mjs": evalSource("scorers.exact()"), "data.jsonl": "" });
      const file = join(p.dir, "eval.mjs");
      const calls = () => callsOf(p.dir);

      // The same source run in two stores.
      writeFileSync(join(p.dir, "data.jsonl"), jsonl(sourceRows()));
      const [a, b] = [await open(), await open()];
      const source = await prepareStart({ eval: file, fresh: true });
      const sourceA = (await runEval({ store: a, ...source })).runId;
      const sourceB = (await runEval({ store: b, ...source })).runId;
      calls();

      // A scorer added, the dataset edited: what the new run reuses, scores again and executes.
      writeFileSync(file, evalSource(`scorers.exact(), scorers.includes()`));
      writeFileSync(join(p.dir, "data.jsonl"), jsonl(newRows()));
      const ask = { eval: file, reuse: "latest", fresh: true };
      const paged = await prepareStart({ ...ask, paged: { minBytes: 0 } });
      expect(paged.eval.pages).toBeDefined();
      expect(paged.eval.samples).toHaveLength(0);
      const whole = await prepareStart({ ...ask, paged: { minBytes: 1 << 30 } });
      expect(whole.eval.pages).toBeUndefined();

      const watch = watchedReads(a);
      const planA = await planStart(watch.store, paged);
      const planB = await planStart(b, whole);
      expect({ ...planA, source: "" }).toEqual({ ...planB, source: "" });
      expect(planA.source).toBe(sourceA);
      expect(planA.reused).toBeGreaterThan(1_000);
      expect(planA.rescored).toBe(planA.reused);
      expect(planA.notReused.map((r) => r.reason).sort()).toEqual([
        "new sample",
        "sample changed: target",
        "source outcome is an error",
      ]);

      // The source's errors execute again, and pass now.
      process.env.HEALED = "1";
      const reportA = await runEval({ store: watch.store, ...paged }).finally(
        () => delete process.env.HEALED,
      );
      const executedA = calls();
      process.env.HEALED = "1";
      const reportB = await runEval({ store: b, ...whole }).finally(
        () => delete process.env.HEALED,
      );
      const executedB = calls();

      expect(reportA.status).toBe("completed");
      expect(await stored(a, reportA.runId, sourceA)).toEqual(
        await stored(b, reportB.runId, sourceB),
      );
      // The same keys executed, each once: none the source scored for the same sample.
      expect(executedA).toEqual(executedB);
      expect(executedA).toHaveLength(planA.execute);
      const figures = (r: typeof reportA) => ({ ...r, runId: "", wallMs: 0, startedAt: "" });
      expect(figures(reportA)).toEqual(figures(reportB));
      // Every reused output awaits the added scorer: scored, not executed.
      expect(reportA.plan).toMatchObject({ total: planA.keys, toRescore: planA.rescored });
      // Nothing of either run read whole: the source by page and by id, the new run by page.
      expect(watch.calls.filter((c) => WHOLE_READS.includes(c))).toEqual([]);
    },
  );

  it.skipIf(skip)(
    "stopped after its seed, it resumes a page at a time, executing only the keys left",
    async () => {
      const p = project({ "eval.mjs": evalSource("scorers.exact()"), "data.jsonl": "" });
      const file = join(p.dir, "eval.mjs");
      writeFileSync(join(p.dir, "data.jsonl"), jsonl(sourceRows()));
      const store = await open();
      await runEval({ store, ...(await prepareStart({ eval: file })) });
      writeFileSync(join(p.dir, "data.jsonl"), jsonl(newRows()));
      const started = await prepareStart({ eval: file, reuse: "latest", paged: { minBytes: 0 } });
      callsOf(p.dir);
      process.env.HEALED = "1";
      try {
        const first = await runEval({ store, ...started, ...stopAfter(60) });
        expect(first.status).toBe("interrupted");
        // Every reused key is stored: recorded so a resume need not plan a cut-short seed.
        expect((await store.runs.get(first.runId))!.config.reuse).toMatchObject({ seeded: true });
        expect(first.reuse).not.toHaveProperty("seeded");
        const before = await store.reads.listAttemptHeads(first.runId);
        const reused = before.filter((h) => h.provenance.kind === "imported");
        expect(reused).toHaveLength(first.reuse!.reused);
        callsOf(p.dir);

        const watch = watchedReads(store);
        const runId = first.runId;
        const resumed = await resumeRun({ store: watch.store, runId, paged: { minBytes: 0 } });
        expect(resumed.status).toBe("completed");
        expect(watch.calls.filter((c) => WHOLE_READS.includes(c))).toEqual([]);
        const heads = await store.reads.listAttemptHeads(runId);
        const keys = heads.map((h) => `${h.sampleId}#${h.epoch}`);
        expect(new Set(keys).size).toBe(first.plan.total); // every key, one attempt each
        expect(heads).toHaveLength(first.plan.total);
        // Executed now: the keys neither reused nor executed before the stop, each once.
        const stored = new Set(before.map((h) => `${h.sampleId}#${h.epoch}`));
        expect(callsOf(p.dir)).toEqual(keys.filter((k) => !stored.has(k)).sort());
        expect(resumed.plan).toMatchObject({ preserved: before.length });
      } finally {
        delete process.env.HEALED;
      }
    },
  );

  it.skipIf(skip)("a blocked or missing source reuses nothing and executes every key", async () => {
    const p = project({ "eval.mjs": evalSource("scorers.exact()"), "data.jsonl": "" });
    const file = join(p.dir, "eval.mjs");
    writeFileSync(join(p.dir, "data.jsonl"), jsonl(newRows()));
    const store = await open();
    const none = await prepareStart({ eval: file, reuse: "latest", paged: { minBytes: 0 } });
    const plan = await planStart(store, none);
    expect(plan).toMatchObject({ source: null, reused: 0, execute: 2 * newRows().length });
    expect(plan.notReused).toEqual([
      { reason: 'no earlier run of eval "paged-reuse"', keys: 2 * newRows().length },
    ]);
    const report = await runEval({ store, ...none });
    expect(report.plan).toMatchObject({ preserved: 0, toExecute: 2 * newRows().length });
    expect(report.counts.scored + report.counts.errored).toBe(2 * newRows().length);
  });
});
