import { describe, expect, it } from "vitest";
import type { OutcomeFilter } from "../types.js";
import {
  draft,
  errorDraft,
  fingerprintOf,
  type HarnessRef,
  newRun,
  owner,
  sampleRecords,
  sleep,
} from "./fixtures.js";

const k = (sampleId: string, epoch: number) => ({ sampleId, epoch });

/** s1..s3 × 2 epochs: s1#1 error then pass, s1#2 error, s2#1 fail, s2#2 pass (score 0.5 / 1). */
async function scoredRun(h: HarnessRef) {
  const { run, owner: me } = await newRun(h.store, { id: "read" });
  await h.store.attempts.record(run.id, me.token, [errorDraft(k("s1", 1))]);
  await h.store.attempts.record(run.id, me.token, [
    draft(k("s1", 1)),
    errorDraft(k("s1", 2)),
    draft(k("s2", 1), {
      output: "wrong",
      scores: [
        { scorer: "exact", value: 0 },
        { scorer: "includes", value: 1 },
      ],
    }),
    draft(k("s2", 2), {
      scores: [
        { scorer: "exact", value: 1 },
        { scorer: "judge", value: null, skipped: "n/a" },
      ],
    }),
  ]);
  return { run, me };
}

/** The read model behind the API's tables and live views: outcomes, attempt feed, benchmarks. */
export function describeReadModelContract(h: HarnessRef): void {
  describe("read model", () => {
    describeSnapshotPages(h);
    describeOpenSamples(h);
    describeSampleHeads(h);
    it("reads several runs' report inputs at once, each as its own listings give them", async () => {
      const { run } = await scoredRun(h);
      const { run: other, owner: me } = await newRun(h.store, { id: "other" });
      await h.store.attempts.record(other.id, me.token, [draft(k("s2", 1), { usage: null })]);
      const { run: empty } = await newRun(h.store, { id: "empty" });
      const inputs = await h.store.reads.listReportInputs([run.id, other.id, empty.id, "nope"]);
      expect([...inputs.keys()]).toEqual([run.id, other.id, empty.id, "nope"]);
      expect(inputs.get("nope")).toEqual({ fingerprints: new Map(), heads: [], scoringUsage: [] });
      for (const id of [run.id, other.id, empty.id]) {
        const got = inputs.get(id)!;
        expect(got.heads).toEqual(await h.store.reads.listAttemptHeads(id));
        expect([...got.fingerprints]).toEqual(
          (await h.store.reads.listSampleFingerprints(id)).map((f) => [f.sampleId, f.fingerprint]),
        );
        expect(got.scoringUsage).toEqual(
          (await h.store.reads.listScorings(id)).flatMap((s) => (s.usage ? [s.usage] : [])),
        );
      }
      expect(inputs.get(empty.id)?.heads).toEqual([]);
      expect((await h.store.reads.listReportInputs([])).size).toBe(0);
    });

    it("lists every key in key order with its outcome, pending ones included", async () => {
      const { run } = await scoredRun(h);
      const page = await h.store.reads.listOutcomes(run.id);
      expect(page.total).toBe(6);
      expect(page.entries.map((e) => [e.sampleId, e.epoch, e.status, e.attempts])).toEqual([
        ["s1", 1, "scored", 2],
        ["s1", 2, "error", 1],
        ["s2", 1, "scored", 1],
        ["s2", 2, "scored", 1],
        ["s3", 1, "pending", 0],
        ["s3", 2, "pending", 0],
      ]);
      expect(page.entries[0]).toMatchObject({
        sample: sampleRecords(["s1"])[0]?.sample,
        fingerprint: fingerprintOf("s1"),
        outcome: { attempt: 2, status: "scored", output: "answer for s1", runId: run.id },
      });
      expect(page.entries[1]?.outcome).toMatchObject({ error: { type: "provider" } });
      expect(page.entries[4]?.outcome).toBeNull();
      expect(page.entries[0]?.outcome).not.toHaveProperty("transcript");
    });

    it.each<[string, OutcomeFilter, string[]]>([
      ["pending keys", { status: "pending" }, ["s3#1", "s3#2"]],
      ["errored keys", { status: "error" }, ["s1#2"]],
      ["scored keys", { status: "scored" }, ["s1#1", "s2#1", "s2#2"]],
      ["passes", { result: "pass" }, ["s1#1", "s2#2"]],
      ["failures", { result: "fail" }, ["s2#1"]],
      ["passes of one scorer", { scorer: "includes", result: "pass" }, ["s2#1"]],
      ["failures of one scorer", { scorer: "exact", result: "fail" }, ["s2#1"]],
      ["outcomes a scorer valued", { scorer: "judge" }, []],
      ["a search in outputs, any case", { search: "ANSWER FOR S2" }, ["s2#2"]],
      ["a search in samples", { search: "s3?" }, ["s3#1", "s3#2"]],
      ["one sample", { sampleId: "s2" }, ["s2#1", "s2#2"]],
      ["a page", { limit: 2, offset: 1 }, ["s1#2", "s2#1"]],
      ["a page past the end", { limit: 2, offset: 10 }, []],
    ])("filters %s", async (_label, filter, keys) => {
      const { run } = await scoredRun(h);
      const page = await h.store.reads.listOutcomes(run.id, filter);
      expect(page.entries.map((e) => `${e.sampleId}#${e.epoch}`)).toEqual(keys);
      if (filter.limit === undefined) expect(page.total).toBe(keys.length);
      else expect(page.total).toBe(6);
    });

    it("treats attempts of an old fingerprint as history, not outcome", async () => {
      const { run, me } = await scoredRun(h);
      await h.store.runs.updateSamples(run.id, me.token, sampleRecords(["s1"], 2));
      const page = await h.store.reads.listOutcomes(run.id, { sampleId: "s1" });
      expect(page.entries.map((e) => [e.status, e.attempts, e.fingerprint])).toEqual([
        ["pending", 2, fingerprintOf("s1", 2)],
        ["pending", 1, fingerprintOf("s1", 2)],
      ]);
    });

    it("refuses an unknown run", async () => {
      await expect(h.store.reads.listOutcomes("nope")).rejects.toMatchObject({
        code: "E_RUN_NOT_FOUND",
      });
    });

    it("feeds a run's attempts in commit order from a cursor", async () => {
      const { run, owner: me } = await newRun(h.store, { id: "fed" });
      const other = await newRun(h.store, { id: "other" });
      await h.store.attempts.record(run.id, me.token, [draft(k("s3", 1))]);
      const start = await h.store.reads.listAttemptsAfter(run.id);
      expect(start.attempts).toEqual([]);

      await h.store.attempts.record(run.id, me.token, [draft(k("s2", 1)), errorDraft(k("s1", 1))]);
      await h.store.attempts.record(other.run.id, other.owner.token, [draft(k("s1", 1))]);
      await h.store.attempts.record(run.id, me.token, [draft(k("s1", 1))]);
      const first = await h.store.reads.listAttemptsAfter(run.id, {
        after: start.cursor,
        limit: 2,
      });
      expect(first.attempts.map((a) => [a.sampleId, a.attempt, a.status])).toEqual([
        ["s2", 1, "scored"],
        ["s1", 1, "error"],
      ]);
      const rest = await h.store.reads.listAttemptsAfter(run.id, { after: first.cursor });
      expect(rest.attempts.map((a) => [a.sampleId, a.attempt])).toEqual([["s1", 2]]);
      const none = await h.store.reads.listAttemptsAfter(run.id, { after: rest.cursor });
      expect(none).toEqual({ attempts: [], cursor: rest.cursor });
      const all = await h.store.reads.listAttemptsAfter(run.id, { after: 0 });
      expect(all.attempts).toHaveLength(4);
    });

    it("summarizes benchmarks by eval name: a resumed run counts once", async () => {
      const a = await newRun(h.store, { id: "a1", config: { evalName: "alpha", model: "m1" } });
      await sleep(5);
      await newRun(h.store, { id: "a2", config: { evalName: "alpha", model: "m2" } });
      await sleep(5);
      const b = await newRun(h.store, { id: "b1", config: { evalName: "beta" } });
      await h.store.runs.release("b1", b.owner.token, "completed");
      await sleep(5);
      await h.store.runs.release("a1", a.owner.token, "interrupted");
      for (let i = 0; i < 2; i++) {
        const next = owner(`resumer${i}`);
        expect(await h.store.runs.claim("a1", next, null)).toBe(true);
        await h.store.runs.release("a1", next.token, "interrupted");
      }
      expect(await h.store.reads.listBenchmarks()).toEqual([
        { evalName: "beta", runs: 1, running: 0, lastCreatedAt: expect.any(String) },
        { evalName: "alpha", runs: 2, running: 1, lastCreatedAt: expect.any(String) },
      ]);
    });
  });
}

/** The snapshot a page at a time: what a streamed export joins the attempts' pages with. */
function describeSnapshotPages(h: HarnessRef): void {
  it.each([1, 2, 5, 1_000])(
    "pages the snapshot by sample id in byte order, %i at a time, as getSamples reads it",
    async (pageSize) => {
      const { run } = await newRun(h.store, { ids: ["b", "a10", "é", "B", "a9", "\u{1F600}"] });
      const whole = await h.store.reads.getSamples(run.id);
      const pages: number[] = [];
      const paged = [];
      for await (const page of h.store.reads.samplePages(run.id, pageSize)) {
        pages.push(page.length);
        paged.push(...page);
      }
      expect(paged).toEqual(whole);
      expect(paged.map((r) => r.sample.id)).toEqual(["B", "a10", "a9", "b", "é", "\u{1F600}"]);
      const prints = [];
      for await (const page of h.store.reads.sampleFingerprintPages(run.id, pageSize)) {
        pages.push(page.length);
        prints.push(...page);
      }
      expect(prints).toEqual(await h.store.reads.listSampleFingerprints(run.id));
      expect(Math.max(...pages)).toBeLessThanOrEqual(pageSize);
      for await (const page of h.store.reads.samplePages("r_none", pageSize)) {
        expect(page).toEqual([]);
      }
    },
  );

  it("pages a part of the snapshot, and marks the n-th sample id after one to split it", async () => {
    const { run } = await newRun(h.store, { ids: ["b", "a10", "é", "B", "a9", "\u{1F600}"] });
    // Byte order: B, a10, a9, b, é, 😀.
    const mark = (after: string, count: number) => h.store.reads.sampleIdMark(run.id, after, count);
    expect(await mark("", 2)).toBe("a10");
    expect(await mark("a10", 2)).toBe("b");
    expect(await mark("b", 2)).toBe("\u{1F600}");
    expect(await mark("\u{1F600}", 2)).toBeUndefined();
    expect(await mark("", 1)).toBe("B");
    expect(await mark("a9", 3)).toBe("\u{1F600}");
    expect(await mark("a9", 4)).toBeUndefined();
    expect(await h.store.reads.sampleIdMark("r_none", "", 1)).toBeUndefined();
    const place = (id: string) => h.store.reads.samplePlace(run.id, id);
    expect(await place("B")).toEqual({ index: 0, afterSampleId: "" });
    expect(await place("b")).toEqual({ index: 3, afterSampleId: "a9" });
    expect(await place("\u{1F600}")).toEqual({ index: 5, afterSampleId: "é" });
    expect(await place("a")).toBeUndefined();
    expect(await h.store.reads.samplePlace("r_none", "B")).toBeUndefined();
    const ids = async (afterSampleId: string) => {
      const read: string[][] = [];
      for await (const page of h.store.reads.sampleFingerprintPages(run.id, 2, { afterSampleId })) {
        read.push(page.map((f) => f.sampleId));
      }
      for await (const page of h.store.reads.samplePages(run.id, 2, { afterSampleId })) {
        read.push(page.map((r) => r.sample.id));
      }
      return read;
    };
    expect(await ids("a10")).toEqual([
      ["a9", "b"],
      ["é", "\u{1F600}"],
      ["a9", "b"],
      ["é", "\u{1F600}"],
    ]);
    expect(await ids("\u{1F600}")).toEqual([]);
  });
}

/** What a resume plans from when the store says which samples still have work. */
function describeOpenSamples(h: HarnessRef): void {
  it("names the samples with a key left to settle, and reads only their attempts", async () => {
    const { run, me } = await scoredRun(h);
    const heads = async (ids: string[]) =>
      (await h.store.reads.listAttemptHeads(run.id)).filter((a) => ids.includes(a.sampleId));
    // s1#2 errored, s3 never started; s2's keys are scored (a score of 0 included).
    expect(await h.store.reads.openSampleHeads(run.id, 2)).toEqual({
      sampleIds: ["s1", "s3"],
      heads: await heads(["s1", "s3"]),
    });
    expect((await h.store.reads.openSampleHeads(run.id, 2)).heads).toHaveLength(3);
    // Epoch 2 is not the plan's: s1 and s2 are settled.
    expect(await h.store.reads.openSampleHeads(run.id, 1)).toEqual({
      sampleIds: ["s3"],
      heads: [],
    });
    // Attempts of an old fingerprint settle nothing, but are read as the sample's.
    await h.store.runs.updateSamples(run.id, me.token, sampleRecords(["s2"], 2));
    expect(await h.store.reads.openSampleHeads(run.id, 1)).toEqual({
      sampleIds: ["s2", "s3"],
      heads: await heads(["s2"]),
    });
    await h.store.attempts.record(run.id, me.token, [
      draft(k("s2", 1), { fingerprint: fingerprintOf("s2", 2) }),
      draft(k("s3", 1)),
    ]);
    expect(await h.store.reads.openSampleHeads(run.id, 1)).toEqual({ sampleIds: [], heads: [] });
    expect(await h.store.reads.openSampleHeads("nope", 1)).toEqual({ sampleIds: [], heads: [] });
  });
}

/** What an import plans from: the snapshot and attempts of the samples its records name only. */
function describeSampleHeads(h: HarnessRef): void {
  it("reads the fingerprints, attempt heads and records of the samples named, a page of ids at a time", async () => {
    const ids = ["b", "a", "\u{1F600}", "é", "z"];
    const { run, owner: me } = await newRun(h.store, { ids });
    await h.store.attempts.record(run.id, me.token, [
      errorDraft(k("a", 1)),
      draft(k("b", 2)),
      draft(k("\u{1F600}", 1)),
      draft(k("z", 1)),
    ]);
    await h.store.attempts.record(run.id, me.token, [draft(k("a", 1)), errorDraft(k("é", 1))]);
    // The named samples' attempts of an old fingerprint are theirs too.
    await h.store.runs.updateSamples(run.id, me.token, sampleRecords(["é"], 2));
    const named = ["b", "a", "é", "\u{1F600}"];
    const expected = {
      fingerprints: (await h.store.reads.listSampleFingerprints(run.id)).filter((f) =>
        named.includes(f.sampleId),
      ),
      heads: (await h.store.reads.listAttemptHeads(run.id)).filter((a) =>
        named.includes(a.sampleId),
      ),
    };
    expect(expected.fingerprints.map((f) => f.sampleId)).toEqual(["a", "b", "é", "\u{1F600}"]);
    expect(expected.heads).toHaveLength(5);
    // Named twice, or not a sample of the run: once, or not at all. 2,500 ids make three pages,
    // the named samples on the first and the last.
    const unknown = Array.from({ length: 2_500 }, (_, i) => `m${String(i).padStart(4, "0")}`);
    const asked = ["é", "b", ...unknown, "a", "\u{1F600}", "b"];
    expect(await h.store.reads.sampleHeads(run.id, asked)).toEqual(expected);
    // Their records alike: each once, in the snapshot's (byte) order, the updated one as it is now.
    expect(await h.store.reads.sampleRecordsOf(run.id, asked)).toEqual(
      (await h.store.reads.getSamples(run.id)).filter((r) => named.includes(r.sample.id)),
    );
    expect((await h.store.reads.sampleRecordsOf(run.id, ["é"]))[0]!.fingerprint).toBe(
      expected.fingerprints.find((f) => f.sampleId === "é")!.fingerprint,
    );
    expect(await h.store.reads.sampleRecordsOf(run.id, [])).toEqual([]);
    expect(await h.store.reads.sampleRecordsOf("nope", ["a"])).toEqual([]);
    expect(await h.store.reads.sampleHeads(run.id, [])).toEqual({ fingerprints: [], heads: [] });
    expect(await h.store.reads.sampleHeads("nope", ["a"])).toEqual({
      fingerprints: [],
      heads: [],
    });
  });
}
