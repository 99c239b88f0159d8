import { unlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import type { RunReport } from "../src/core/events.js";
import { LeasedSnapshot } from "../src/engine/leased-snapshot.js";
import {
  snapshotIndexOf,
  snapshotRecordOf,
  snapshotReplayOf,
} from "../src/engine/snapshot-keys.js";
import { foldedReport } from "../src/engine/report.js";
import { prepareStart, startDistributed } from "../src/runs/start-run.js";
import { workRun } from "../src/runs/work-run.js";
import { errorDraft, owner, runConfig, sampleRecords } from "../src/store/contract/fixtures.js";
import type { Store } from "../src/store/types.js";
import { bothStores } from "./helpers/both-stores.js";
import { perTest } from "./helpers/eval-project.js";
import { failingEval, pagedRows } from "./helpers/paged-runs.js";
import { WHOLE_READS, watchedReads } from "./helpers/watched-reads.js";

// Issue 34: a distributed run of a large dataset file in flat memory. `stet run --distributed`
// creates the run from the file's pages and its first worker plans from the run's figures; a
// worker that joins (`stet worker`, `stet resume` of a distributed run) plans from the figures
// too (the file compared with the snapshot a page at a time unless it still has the run's stamp).
// Each finds the keys leased to it in the snapshot (`LeasedSnapshot`), and tells other workers'
// attempts by the highest attempt stored of each key before it began. `paged: { minBytes: 0 }`
// makes a small file take that way (the CLI asks for files of 8 MiB and up). Which of the store's
// reads each worker made (none that reads every sample or attempt of the run) tells it from a
// worker that loads the file.

const N = 1_300; // more than two of the snapshot's pages (512 samples)

// Every 13th sample fails (after a journaled step) while the file `fail` is there.
const EVAL = failingEval("paged-workers", 4, 1);

const { project } = perTest();

const attemptsOf = (report: RunReport, name: "reused" | "byOtherWorkers") =>
  report.usage[name]?.attempts ?? 0;

describe.each(bothStores())("distributed workers of a paged run (%s)", (_name, open, skip) => {
  it.skipIf(skip)(
    "the creator and a worker that joins hold no list: each key executed once, replays on a resume, reports that partition the run",
    async () => {
      const store = await open();
      const p = project({ "eval.mjs": EVAL, "data.jsonl": pagedRows(N), fail: "" });
      const prepared = await prepareStart({
        eval: join(p.dir, "eval.mjs"),
        paged: { minBytes: 0 },
      });
      expect(prepared.eval.pages).toBeDefined();
      const first = watchedReads(store);
      const second = watchedReads(store);
      let committed = 0;
      let joining: Promise<RunReport> | undefined;
      const created = await startDistributed({
        store: first.store,
        ...prepared,
        onEvent: (e) => {
          // A second worker joins once 300 keys are in.
          if (e.type !== "attempt-committed" || ++committed !== 300) return;
          // The creator's next keys wait until the joining worker has its first keys: it has
          // some to execute however slow its start is.
          writeFileSync(join(p.dir, "hold"), "");
          joining = workRun({
            store: second.store,
            runId: e.attempt.runId,
            paged: { minBytes: 0 },
            onJoined: () => unlinkSync(join(p.dir, "hold")),
          });
        },
      });
      const joined = await joining!;
      const runId = created.runId;
      expect(joined.runId).toBe(runId);
      for (const watch of [first, second]) {
        expect(watch.calls.filter((c) => WHOLE_READS.includes(c))).toEqual([]);
      }
      expect(second.calls).toContain("samplePages");

      // Every key executed once, by one of the two.
      const attempts = await store.reads.listAttempts(runId);
      expect(attempts).toHaveLength(2 * N);
      const errored = attempts.filter((a) => a.status === "error");
      expect(errored.length).toBe(2 * Math.ceil(N / 13));
      expect(created.executed + joined.executed).toBe(2 * N);
      expect(joined.executed).toBeGreaterThan(0);
      // Each report's shares of the run: this worker's, the other's meanwhile, and what the
      // joining one found stored (the creator's first keys).
      expect(attemptsOf(created, "byOtherWorkers")).toBe(joined.executed);
      expect(attemptsOf(created, "reused")).toBe(0);
      expect(attemptsOf(joined, "reused") + attemptsOf(joined, "byOtherWorkers")).toBe(
        created.executed,
      );
      expect(attemptsOf(joined, "reused")).toBeGreaterThanOrEqual(300);
      const run = (await store.runs.get(runId))!;
      expect(run.status).toBe("errored");
      const folded = await foldedReport(store, run);
      for (const report of [created, joined]) {
        expect(report.counts).toEqual(folded.counts);
        expect(report.metrics).toEqual(folded.metrics);
        expect(report.usage.totalSpent).toEqual(folded.usage.totalSpent);
      }

      // A resume of the distributed run (a worker, reopening it) executes the errored keys only,
      // each replaying its journaled step, and still holds no list.
      unlinkSync(join(p.dir, "fail"));
      const third = watchedReads(store);
      const resumed = await workRun({
        store: third.store,
        runId,
        reopen: true,
        paged: { minBytes: 0 },
      });
      expect(third.calls.filter((c) => WHOLE_READS.includes(c))).toEqual([]);
      expect(resumed.status).toBe("completed");
      expect(resumed.executed).toBe(errored.length);
      expect(resumed.journal?.replayed).toBe(errored.length);
      expect(attemptsOf(resumed, "reused")).toBe(2 * N - errored.length);
      expect(attemptsOf(resumed, "byOtherWorkers")).toBe(0);
      const after = await store.reads.listAttempts(runId);
      expect(after).toHaveLength(2 * N + errored.length);
      const byKey = new Map(after.map((a) => [`${a.sampleId}#${a.epoch}#${a.attempt}`, a]));
      for (const a of attempts)
        expect(byKey.get(`${a.sampleId}#${a.epoch}#${a.attempt}`)).toEqual(a);
      const final = await foldedReport(store, (await store.runs.get(runId))!);
      expect(resumed.metrics).toEqual(final.metrics);
      expect(resumed.counts).toEqual(final.counts);
    },
  );

  it.skipIf(skip)(
    "a leased key is given its record, its place in the snapshot and its replay, also behind the page in hand",
    async () => {
      const store = await open();
      const ids = Array.from({ length: 1_100 }, (_, i) => `k${String(i).padStart(4, "0")}`);
      const samples = sampleRecords(ids);
      const me = owner();
      const run = await store.runs.create({
        id: "r_leased",
        config: runConfig(),
        samples,
        owner: me,
      });
      // k0003's first epoch errored once: its next attempt replays that attempt's journal.
      await store.attempts.record(run.id, me.token, [errorDraft({ sampleId: "k0003", epoch: 1 })]);
      // The snapshot's records read through its pages, counted.
      let read = 0;
      const counting = {
        ...store,
        reads: {
          ...store.reads,
          samplePages: async function* (...args: Parameters<Store["reads"]["samplePages"]>) {
            for await (const page of store.reads.samplePages(...args)) {
              read += page.length;
              yield page;
            }
          },
        },
      } as Store;
      const located = new LeasedSnapshot(counting, run.id, 2, 100);
      const forward = await located.locate([
        { sampleId: "k0700", epoch: 1 },
        { sampleId: "k0701", epoch: 1 },
        { sampleId: "k1099", epoch: 2 },
      ]);
      expect(forward.map((k) => snapshotIndexOf(k))).toEqual([700, 701, 1099]);
      expect(snapshotRecordOf(forward[0]!)).toEqual(samples[700]);
      expect(read).toBe(1_100);
      // Behind the page in hand (a dead worker's lease, the next epoch): the pages start again at
      // the key's sample, not at the snapshot's start (which read 900 records more for k0900).
      const [behind] = await located.locate([{ sampleId: "k0900", epoch: 2 }]);
      expect(snapshotIndexOf(behind!)).toBe(900);
      expect(snapshotRecordOf(behind!)).toEqual(samples[900]);
      expect(read).toBe(1_200);
      const [back] = await located.locate([{ sampleId: "k0003", epoch: 1 }]);
      expect(read).toBe(1_300);
      expect(snapshotIndexOf(back!)).toBe(3);
      expect(snapshotRecordOf(back!)).toEqual(samples[3]);
      expect(snapshotReplayOf(back!)).toBe(1);
      expect(snapshotReplayOf(forward[0]!)).toBeUndefined();
      await expect(located.locate([{ sampleId: "nope", epoch: 1 }])).rejects.toThrow(
        /not in run r_leased's snapshot/,
      );
    },
  );
});
