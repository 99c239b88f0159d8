import { unlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { isStetError } from "../src/core/errors.js";
import type { RunReport } from "../src/core/events.js";
import { byteOrder } from "../src/core/keys.js";
import type { RerunRequest } from "../src/core/types.js";
import { foldedReport, summarizePlan } from "../src/engine/report.js";
import { recordedReruns } from "../src/engine/rerun-plan.js";
import { planResume, resumeRun, type ResumeOptions } from "../src/runs/resume-run.js";
import type { Store } from "../src/store/types.js";
import { bothStores } from "./helpers/both-stores.js";
import {
  failingEval,
  interruptedPagedRun,
  pagedRow,
  pagedRows,
  stopAfter,
} from "./helpers/paged-runs.js";
import { perTest } from "./helpers/eval-project.js";
import { WHOLE_READS, watchedReads } from "./helpers/watched-reads.js";

// The resume of an interrupted run whose large dataset file still has the stamp the run recorded
// executes from the run's snapshot a page at a time (issue 34: resume in flat memory): the file is
// not read, no list of keys, samples or attempts is held; each page of the snapshot is planned
// with its own attempts. `resumeRun`'s `paged` asks for it (`stet resume` does for files of
// 8 MiB and up); `minBytes: 0` here makes a small file take that way. What it executes, stores
// and reports must be what the stored attempts say; which of the store's reads it makes (none of
// those that read every sample or attempt of the run) is how a test tells it from the resume
// that loads the file.

const N = 1_300; // more than two of the snapshot's pages (512 samples)

// Every 13th sample fails (after a journaled step) while the file `fail` is there.
const EVAL = failingEval("paged-resume");

const { project } = perTest();
const stores = bothStores();

// Several runs of 2,600 keys a test, on PostgreSQL up to ~30 s on a quiet machine: CI shares two
// cores, so each test may take several times that.
describe.each(stores)(
  "a resume from the snapshot's pages (%s)",
  { timeout: 240_000 },
  (_name, open, skip) => {
    it.skipIf(skip)(
      "executes only what was left, in sample id order, replays errored keys' journals, and reports what the stored attempts say",
      async () => {
        const store = await open();
        const p = project({ "eval.mjs": EVAL, "data.jsonl": pagedRows(N), fail: "" });
        const runId = await interruptedPagedRun(store, p.dir, 1_500);
        const before = await store.reads.listAttempts(runId);
        const errored = before.filter((a) => a.status === "error");
        expect(errored.length).toBeGreaterThan(0);
        const scored = before.filter((a) => a.status === "scored").length;
        unlinkSync(join(p.dir, "fail"));

        const order: string[] = [];
        const watch = watchedReads(store);
        const report = await resumeRun({
          store: watch.store,
          runId,
          paged: { minBytes: 0 },
          onEvent: (e) => {
            if (e.type === "attempt-committed")
              order.push(`${e.attempt.epoch}:${e.attempt.sampleId}`);
          },
        });
        expect(report.status).toBe("completed");
        // Nothing read whole: the snapshot's pages, each page's attempts, the figures.
        expect(watch.calls.filter((c) => WHOLE_READS.includes(c))).toEqual([]);
        expect(watch.calls).toContain("samplePages");
        expect(report.plan).toMatchObject({
          total: 2 * N,
          preserved: scored,
          toExecute: 2 * N - scored,
          errored: errored.length,
          neverStarted: 2 * N - before.length,
        });

        // What was stored stands byte for byte; each key now has one scored attempt, after its
        // errored one where it had one.
        const after = await store.reads.listAttempts(runId);
        const key = (a: { sampleId: string; epoch: number; attempt: number }) =>
          `${a.sampleId}#${a.epoch}#${a.attempt}`;
        const byKey = new Map(after.map((a) => [key(a), a]));
        for (const a of before) expect(byKey.get(key(a))).toEqual(a);
        expect(after).toHaveLength(before.length + (2 * N - scored));
        expect(after.filter((a) => a.status === "scored")).toHaveLength(2 * N);

        // Epoch by epoch, in the snapshot's order, only the keys without a scored attempt.
        const done = new Set(
          before.filter((a) => a.status === "scored").map((a) => `${a.epoch}:${a.sampleId}`),
        );
        const ids = Array.from({ length: N }, (_, i) => `s${i}`).sort();
        const expected = [1, 2]
          .flatMap((e) => ids.map((id) => `${e}:${id}`))
          .filter((k) => !done.has(k));
        expect(order).toEqual(expected);

        // Each errored key's new attempt replayed its journaled step instead of running it again,
        // and only those keys' journals were read (one read a key on PostgreSQL is a round trip).
        expect(report.journal?.replayed).toBe(errored.length);
        expect(watch.calls.filter((c) => c === "journal.list")).toHaveLength(errored.length);

        // The report is the stored attempts' (what a fold of every attempt gives), with now's share.
        const folded = await foldedReport(store, (await store.runs.get(runId))!);
        expect(report.metrics).toEqual(folded.metrics);
        expect(report.counts).toEqual(folded.counts);
        expect(report.usage.totalSpent).toEqual(folded.usage.totalSpent);
        expect(report.executed).toBe(2 * N - scored);
        expect(report.usage.spentNow.costUsd).toBeCloseTo(0.001 * (2 * N - scored), 9);
      },
    );

    it.skipIf(skip)(
      "scores stored scorer errors again a page at a time, calling no solver",
      async () => {
        const store = await open();
        const judged = EVAL.replace(
          "scorers: [scorers.exact()],",
          `scorers: [scorers.exact(), { name: "judge", score: ({ sample }) => {
          if (sample.input % 11 === 0 && existsSync(new URL("./judge-down", import.meta.url))) throw new Error("judge down");
          return 1;
        } }],`,
        );
        const p = project({ "eval.mjs": judged, "data.jsonl": pagedRows(N), "judge-down": "" });
        const runId = await interruptedPagedRun(store, p.dir, 1_500);
        const before = await store.reads.listAttempts(runId);
        const scorerErrors = before.filter((a) => a.error?.type === "scorer").length;
        expect(scorerErrors).toBeGreaterThan(0);
        unlinkSync(join(p.dir, "judge-down"));

        const watch = watchedReads(store);
        const report = await resumeRun({ store: watch.store, runId, paged: { minBytes: 0 } });
        expect(report.status).toBe("completed");
        expect(watch.calls.filter((c) => WHOLE_READS.includes(c))).toEqual([]);
        expect(report.plan.toRescore).toBe(scorerErrors);
        expect(report.rescored).toBe(scorerErrors);
        // Scored again, not solved again: one attempt more per key that had none scored or errored.
        const after = await store.reads.listAttempts(runId);
        const solved = before.filter((a) => a.status === "scored" || a.error?.type === "scorer");
        expect(after).toHaveLength(before.length + (2 * N - solved.length));
        expect((await store.reads.countKeys(runId)).remaining).toBe(0);
        const folded = await foldedReport(store, (await store.runs.get(runId))!);
        expect(report.metrics).toEqual(folded.metrics);
      },
    );

    it.skipIf(skip)(
      "with rerunErrors false (--no-rerun-errors) keeps the errored keys",
      async () => {
        const store = await open();
        const p = project({ "eval.mjs": EVAL, "data.jsonl": pagedRows(N), fail: "" });
        const runId = await interruptedPagedRun(store, p.dir, 1_500);
        const before = await store.reads.listAttempts(runId);
        const errored = before.filter((a) => a.status === "error").length;
        unlinkSync(join(p.dir, "fail"));
        const watch = watchedReads(store);
        const report = await resumeRun({
          store: watch.store,
          runId,
          paged: { minBytes: 0 },
          rerunErrors: false,
        });
        expect(watch.calls.filter((c) => WHOLE_READS.includes(c))).toEqual([]);
        expect(report.status).toBe("errored");
        expect(report.plan).toMatchObject({
          erroredKept: errored,
          errored: 0,
          toExecute: 2 * N - before.length,
        });
        const after = await store.reads.listAttempts(runId);
        expect(after).toHaveLength(2 * N); // the errored keys were not executed again
        expect(after.filter((a) => a.status === "error")).toHaveLength(errored);
      },
    );

    it.skipIf(skip)(
      "a changed file is compared with the snapshot a page at a time: it refuses and re-runs the changed samples as loading it whole does",
      async () => {
        // The same run in two stores: one resumed from pages, one loading the file whole.
        const p = project({ "eval.mjs": EVAL, "data.jsonl": pagedRows(N), fail: "" });
        const [a, b] = [await open(), await open()];
        const runIds = [
          await interruptedPagedRun(a, p.dir, 1_500),
          await interruptedPagedRun(b, p.dir, 1_500),
        ];
        // Three samples changed (one that errored, s13), one row added, and the order changed.
        const edited = (i: number) => JSON.stringify({ id: `s${i}`, input: i, target: "changed" });
        const lines = Array.from({ length: N }, (_, i) =>
          [5, 13, 700].includes(i) ? edited(i) : pagedRow(i),
        );
        lines.reverse().push(JSON.stringify({ id: "new", input: 1, target: "2" }));
        writeFileSync(join(p.dir, "data.jsonl"), lines.join("\n") + "\n");
        unlinkSync(join(p.dir, "fail"));
        const resume = (store: Store, runId: string, minBytes: number, rerunChanged = false) =>
          resumeRun({ store, runId, paged: { minBytes }, rerunChanged });

        const watch = watchedReads(a);
        const refused = await resume(watch.store, runIds[0]!, 0).catch((e: unknown) => e);
        const whole = await resume(b, runIds[1]!, 1 << 30).catch((e: unknown) => e);
        expect(isStetError(refused, "E_CHANGED_SAMPLES")).toBe(true);
        expect((refused as Error).message).toContain("3 sample(s) changed");
        expect((refused as { details?: unknown }).details).toEqual(
          (whole as { details?: unknown }).details,
        );

        const paged = await resume(watch.store, runIds[0]!, 0, true);
        const loaded = await resume(b, runIds[1]!, 1 << 30, true);
        expect(watch.calls.filter((c) => WHOLE_READS.includes(c))).toEqual([]);
        const figures = (r: RunReport) => ({
          ...r,
          runId: "",
          wallMs: 0,
          startedAt: "",
          config: null,
        });
        expect(figures(paged)).toEqual(figures(loaded));
        expect(paged.plan).toMatchObject({ changed: ["s13", "s5", "s700"], changedKeys: 6 });
        const stored = async (store: Store, runId: string) =>
          (await store.reads.listAttempts(runId)).map((x) => ({
            key: `${x.sampleId}#${x.epoch}#${x.attempt}`,
            status: x.status,
            output: x.output,
            fingerprint: x.fingerprint,
          }));
        expect(await stored(a, runIds[0]!)).toEqual(await stored(b, runIds[1]!));
        expect(await a.reads.getSamples(runIds[0]!)).toEqual(await b.reads.getSamples(runIds[1]!));
      },
    );

    it.skipIf(skip)(
      "a file that repeats an id, one of the run's or a new row's, is refused as loading it whole refuses it",
      async () => {
        const store = await open();
        const p = project({ "eval.mjs": EVAL, "data.jsonl": pagedRows(N) });
        const runId = await interruptedPagedRun(store, p.dir, 1_500);
        const lines = Array.from({ length: N }, (_, i) => pagedRow(i));
        const attempts = (await store.reads.listAttempts(runId)).length;
        const refusals = async (data: string[]) => {
          writeFileSync(join(p.dir, "data.jsonl"), data.join("\n") + "\n");
          const resume = (minBytes: number) =>
            resumeRun({ store, runId, paged: { minBytes } }).catch((e: unknown) => e);
          return [await resume(0), await resume(1 << 30)] as Error[];
        };
        // s1 twice, s900 gone: as many of the run's samples as it has (a count would not tell).
        const swapped = lines.map((line, i) => (i === 900 ? pagedRow(1) : line));
        // A row the run does not have, twice.
        const extra = JSON.stringify({ id: "new", input: 1, target: "2" });
        for (const data of [swapped, [...lines, extra, extra]]) {
          const [paged, whole] = await refusals(data);
          expect(isStetError(paged, "E_DUPLICATE_ID")).toBe(true);
          expect(paged!.message).toBe(whole!.message);
        }
        expect(await store.reads.listAttempts(runId)).toHaveLength(attempts);
      },
    );

    it.skipIf(skip)(
      "recorded re-run requests (a --rerun killed part way) are planned a page at a time as the whole load plans them, and only the open ones execute",
      async () => {
        const store = await open();
        const p = project({ "eval.mjs": EVAL, "data.jsonl": pagedRows(N) });
        const runId = await interruptedPagedRun(store, p.dir, 1_500);
        expect((await resumeRun({ store, runId, paged: { minBytes: 0 } })).status).toBe(
          "completed",
        );
        // Six samples over three of the snapshot's pages asked to re-run (both epochs), killed
        // after four commits; s13's and s1105's re-runs fail (the file `fail`), so their keys' are
        // errors after the attempt they follow.
        const asked = ["s13", "s1105", "s2", "s600", "s601", "s999"];
        writeFileSync(join(p.dir, "fail"), "");
        const killed = await resumeRun({ store, runId, rerun: asked, ...stopAfter(4) });
        expect(killed.status).toBe("interrupted");
        unlinkSync(join(p.dir, "fail"));
        const requests = await recordedReruns(store, runId);
        const before = await store.reads.listAttempts(runId);
        const pending = requests.filter(
          (r) =>
            !before.some(
              (a) =>
                a.sampleId === r.sampleId &&
                a.epoch === r.epoch &&
                a.attempt > r.after &&
                a.status === "scored",
            ),
        );
        expect(pending.length).toBeGreaterThan(0);
        expect(before.some((a) => a.status === "error")).toBe(true);

        // The plan from the snapshot's pages is the plan of the whole load, count for count.
        const plansOf = (rerunErrors: boolean) =>
          Promise.all(
            [0, 1 << 30].map(async (minBytes) => {
              const planning = await planResume({ store, runId, paged: { minBytes }, rerunErrors });
              expect(planning.ok).toBe(true);
              return planning.ok ? summarizePlan(planning.resume.plan) : undefined;
            }),
          );
        // With --no-rerun-errors too, where a re-run's error keeps the key's scored attempt.
        const kept = await plansOf(false);
        expect(kept[0]).toEqual(kept[1]);
        const plans = await plansOf(true);
        expect(plans[0]).toEqual(plans[1]);
        expect(kept[0]!.preserved).toBeGreaterThan(plans[0]!.preserved);
        // A changed file too: a requested sample (s600) and another (s5) edited.
        const data = join(p.dir, "data.jsonl");
        const edited = (i: number) => JSON.stringify({ id: `s${i}`, input: i, target: "changed" });
        const rows = Array.from({ length: N }, (_, i) =>
          [5, 600].includes(i) ? edited(i) : pagedRow(i),
        );
        writeFileSync(data, rows.join("\n") + "\n");
        const changed = await Promise.all(
          [0, 1 << 30].map(async (minBytes) => {
            const planning = await planResume({
              store,
              runId,
              paged: { minBytes },
              rerunChanged: true,
            });
            return planning.ok ? summarizePlan(planning.resume.plan) : planning.refusal;
          }),
        );
        expect(changed[0]).toEqual(changed[1]);
        expect(changed[0]).toMatchObject({ changed: ["s5", "s600"] });
        writeFileSync(data, pagedRows(N));
        expect(plans[0]).toMatchObject({
          toExecute: pending.length,
          preserved: 2 * N - pending.length,
        });

        const { report, executed, calls } = await committedBy(store, runId);
        expect(report.status).toBe("completed");
        expect(calls.filter((c) => WHOLE_READS.includes(c))).toEqual([]);
        expect(calls).toContain("samplePages");
        expect(report.plan).toEqual(plans[0]);
        expect(executed.sort()).toEqual(pending.map((r) => `${r.sampleId}#${r.epoch}`).sort());
        // Each pending key now has a scored attempt after the one its request follows (the store took
        // it as a re-run: it refuses a second scored attempt otherwise); nothing before changed.
        const after = await store.reads.listAttempts(runId);
        for (const r of pending) {
          const mine = after.filter((a) => a.sampleId === r.sampleId && a.epoch === r.epoch);
          expect(mine.some((a) => a.attempt > r.after && a.status === "scored")).toBe(true);
        }
        const byKey = new Map(after.map((a) => [`${a.sampleId}#${a.epoch}#${a.attempt}`, a]));
        for (const a of before)
          expect(byKey.get(`${a.sampleId}#${a.epoch}#${a.attempt}`)).toEqual(a);
        expect(after).toHaveLength(before.length + pending.length);
        expect(await recordedReruns(store, runId)).toEqual([]);
      },
    );

    it.skipIf(skip)(
      "a new --rerun-failed (with --rerun ids and recorded requests) is planned and recorded a page at a time as the whole load does it",
      async () => {
        const store = await open();
        // Every 7th sample's target is wrong: its keys score 0, so --rerun-failed asks them.
        const rows = Array.from({ length: N }, (_, i) =>
          i % 7 === 0 ? JSON.stringify({ id: `s${i}`, input: i, target: "wrong" }) : pagedRow(i),
        );
        const p = project({ "eval.mjs": EVAL, "data.jsonl": rows.join("\n") + "\n" });
        const runId = await interruptedPagedRun(store, p.dir, 1_500);
        expect((await resumeRun({ store, runId, paged: { minBytes: 0 } })).status).toBe(
          "completed",
        );
        // Recorded first: a --rerun of three samples stopped after one commit (s2#1 done).
        const first = await resumeRun({
          store,
          runId,
          rerun: ["s2", "s600", "s601"],
          ...stopAfter(1),
        });
        expect(first.status).toBe("interrupted");
        expect(await recordedReruns(store, runId)).toHaveLength(5);

        const asks = [
          { rerunFailed: true },
          { rerunFailed: true, rerunLimited: true, rerun: ["s13", "s600", "s5"] },
          { rerunLimited: true, rerun: ["s1"] },
        ];
        for (const ask of asks) {
          const [paged, whole] = await Promise.all(
            [0, 1 << 30].map((minBytes) =>
              planResume({ store, runId, paged: { minBytes }, ...ask }),
            ),
          );
          if (!paged!.ok || !whole!.ok) throw new Error("planned nothing");
          expect(summarizePlan(paged!.resume.plan)).toEqual(summarizePlan(whole!.resume.plan));
          expect(paged!.resume.keys).toBeDefined();
          expect(whole!.resume.keys).toBeUndefined();
        }
        // The failed keys, s13's and s5's, and the open recorded ones: what the whole load records.
        const ask = { rerunFailed: true, rerun: ["s13", "s5"] };
        const whole = await planResume({ store, runId, paged: { minBytes: 1 << 30 }, ...ask });
        if (!whole.ok || !Array.isArray(whole.resume.reruns)) throw new Error("no requests");
        const asked = whole.resume.reruns as RerunRequest[];
        const failedKeys = 2 * Math.ceil(N / 7);
        expect(asked.length).toBe(failedKeys + 2 * 2 + 5); // s5, s13, and the five recorded open
        expect(summarizePlan(whole.resume.plan).toExecute).toBe(asked.length);

        // Executed paged: nothing read whole; stopped after four commits, the claim recorded
        // every request (those four are let go at release as done).
        const stopped = stopAfter(4);
        const killed = await committedBy(store, runId, { ...ask, ...stopped });
        expect(killed.report.status).toBe("interrupted");
        expect(killed.calls.filter((c) => WHOLE_READS.includes(c))).toEqual([]);
        const executed = killed.executed;
        const key = (r: { sampleId: string; epoch: number }) => `${r.sampleId}#${r.epoch}`;
        // In key order, as the store reads them.
        const left = asked
          .filter((r) => !executed.includes(key(r)))
          .sort((a, b) => byteOrder(a.sampleId, b.sampleId) || a.epoch - b.epoch);
        expect(executed).toHaveLength(4);
        expect(await recordedReruns(store, runId)).toEqual(left);

        // A plain resume executes the rest, paged, and leaves no request.
        const before = await store.reads.listAttempts(runId);
        const rest = await committedBy(store, runId);
        expect(rest.report.status).toBe("completed");
        expect(rest.calls.filter((c) => WHOLE_READS.includes(c))).toEqual([]);
        expect(rest.executed.sort()).toEqual(left.map(key).sort());
        const after = await store.reads.listAttempts(runId);
        const byKey = new Map(after.map((a) => [`${key(a)}#${a.attempt}`, a]));
        for (const a of before) expect(byKey.get(`${key(a)}#${a.attempt}`)).toEqual(a);
        expect(await recordedReruns(store, runId)).toEqual([]);

        // An id the run lacks is refused, paged as whole, with nothing recorded.
        const unknown = await planResume({ store, runId, paged: { minBytes: 0 }, rerun: ["nope"] });
        expect(unknown.ok ? undefined : unknown.refusal.reason).toBe("invalid-rerun");
      },
    );

    it.skipIf(skip)(
      "a file under minBytes is loaded and compared with the run's attempts as before",
      async () => {
        const store = await open();
        const p = project({ "eval.mjs": EVAL, "data.jsonl": pagedRows(40) });
        const runId = await interruptedPagedRun(store, p.dir, 10);
        const watch = watchedReads(store);
        const report = await resumeRun({ store: watch.store, runId, paged: { minBytes: 1 << 30 } });
        expect(report.status).toBe("completed");
        expect(watch.calls).toContain("openSampleHeads");
        expect(watch.calls).not.toContain("samplePages");
        expect(await store.reads.listAttempts(runId)).toHaveLength(80);
      },
    );
  },
);

/**
 * A resume from the snapshot's pages (`minBytes: 0`) through `watchedReads`: its report, the keys
 * it committed (`sample#epoch`, in commit order) and the store's reads it made.
 */
async function committedBy(store: Store, runId: string, extra: Partial<ResumeOptions> = {}) {
  const executed: string[] = [];
  const watch = watchedReads(store);
  const report = await resumeRun({
    ...extra,
    store: watch.store,
    runId,
    paged: { minBytes: 0 },
    onEvent: (e) => {
      extra.onEvent?.(e);
      if (e.type === "attempt-committed") executed.push(`${e.attempt.sampleId}#${e.attempt.epoch}`);
    },
  });
  return { report, executed, calls: watch.calls };
}
