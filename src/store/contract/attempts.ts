import { describe, expect, it } from "vitest";
import type { AttemptDraft } from "../../core/types.js";
import {
  draft,
  errorDraft,
  fingerprintOf,
  type HarnessRef,
  newRun,
  sampleRecords,
} from "./fixtures.js";
import { describeAttemptListing } from "./attempt-listing.js";

export function describeAttemptContract(h: HarnessRef): void {
  describe("attempts", () => {
    recordingCases(h);
    rerunAndRetriesCases(h);
    refusalAndCountCases(h);
    inflightCases(h);
    describeAttemptListing(h);
  });
}

/** Recording attempts: numbering, every field, an error then a scored attempt. */
function recordingCases(h: HarnessRef): void {
  it("numbers attempts per key, within a batch and across batches", async () => {
    const { run, owner: me } = await newRun(h.store);
    const k11 = { sampleId: "s1", epoch: 1 };
    const first = await h.store.attempts.record(run.id, me.token, [
      errorDraft(k11),
      errorDraft(k11),
      errorDraft({ sampleId: "s1", epoch: 2 }),
    ]);
    const second = await h.store.attempts.record(run.id, me.token, [
      draft(k11),
      draft({ sampleId: "s2", epoch: 1 }),
    ]);
    expect([...first, ...second].map((a) => [a.sampleId, a.epoch, a.attempt, a.status])).toEqual([
      ["s1", 1, 1, "error"],
      ["s1", 1, 2, "error"],
      ["s1", 2, 1, "error"],
      ["s1", 1, 3, "scored"],
      ["s2", 1, 1, "scored"],
    ]);
    expect(second[0]).toMatchObject({ ...draft(k11), runId: run.id, attempt: 3 });
  });

  it("stores every field and reads it back unchanged", async () => {
    const { run, owner: me } = await newRun(h.store);
    const drafts: AttemptDraft[] = [
      draft(
        { sampleId: "s1", epoch: 1 },
        {
          output: { answer: [1, 2, { deep: null }], text: "héllo ✓" },
          scores: [
            { scorer: "exact", value: 0, answer: "41", explanation: "off by one" },
            { scorer: "judge", value: 0.75, metadata: { votes: [1, 0, 1], model: "m" } },
          ],
          usage: { inputTokens: 100, outputTokens: 20 },
          transcript: [{ role: "assistant", content: "41" }],
          durationMs: 12.5,
          provenance: { kind: "imported", source: "backup.jsonl" },
        },
      ),
      errorDraft(
        { sampleId: "s2", epoch: 1 },
        { error: { type: "scorer", message: "boom", scorer: "judge" } },
      ),
      errorDraft(
        { sampleId: "s3", epoch: 1 },
        { error: { type: "timeout", message: "after 30000 ms" } },
      ),
    ];
    const recorded = await h.store.attempts.record(run.id, me.token, drafts);
    const stored = await h.store.reads.listAttempts(run.id);
    expect(stored).toEqual(recorded);
    expect(stored).toEqual(drafts.map((d) => ({ ...d, runId: run.id, attempt: 1 })));
  });

  it("keeps an error attempt and a later scored one; the key counts as scored", async () => {
    const { run, owner: me } = await newRun(h.store);
    const key = { sampleId: "s2", epoch: 2 };
    await h.store.attempts.record(run.id, me.token, [errorDraft(key)]);
    expect(await h.store.reads.countKeys(run.id)).toMatchObject({ scored: 0, errored: 1 });
    await h.store.attempts.record(run.id, me.token, [draft(key)]);
    expect(await h.store.reads.listAttempts(run.id, key)).toMatchObject([
      { attempt: 1, status: "error", error: { type: "provider" } },
      { attempt: 2, status: "scored", error: null },
    ]);
    expect(await h.store.reads.countKeys(run.id)).toEqual({
      total: 6,
      scored: 1,
      errored: 0,
      remaining: 5,
    });
  });

  it.each<[string, AttemptDraft]>([
    ["a scored", draft({ sampleId: "s1", epoch: 1 })],
    ["an error", errorDraft({ sampleId: "s1", epoch: 1 })],
  ])(
    "rejects a batch holding %s attempt for an already scored key, all or nothing",
    async (_label, late) => {
      const { run, owner: me } = await newRun(h.store);
      await h.store.attempts.record(run.id, me.token, [draft({ sampleId: "s1", epoch: 1 })]);
      await h.store.runs.markInflight(run.id, me.token, [{ sampleId: "s2", epoch: 1 }]);
      const before = await h.store.reads.listAttempts(run.id);
      const batch = [draft({ sampleId: "s2", epoch: 1 }), late];
      await expect(h.store.attempts.record(run.id, me.token, batch)).rejects.toMatchObject({
        code: "E_ALREADY_SCORED",
      });
      expect(await h.store.reads.listAttempts(run.id)).toEqual(before);
      expect(await h.store.runs.listInflight(run.id)).toEqual([{ sampleId: "s2", epoch: 1 }]);
    },
  );
}

/** Re-run drafts and retry counts: accepted once, refused when malformed. */
function rerunAndRetriesCases(h: HarnessRef): void {
  it("accepts a re-run draft (rerunAfter) for a scored key, once, without storing the marker", async () => {
    const { run, owner: me } = await newRun(h.store);
    const key = { sampleId: "s1", epoch: 1 };
    await h.store.attempts.record(run.id, me.token, [draft(key)]);
    const [again] = await h.store.attempts.record(
      run.id,
      me.token,
      [draft(key, { output: "second" })].map((d) => ({ ...d, rerunAfter: 1 })),
    );
    expect(again).toMatchObject({ attempt: 2, status: "scored", output: "second" });
    expect(again).not.toHaveProperty("rerunAfter");
    const stored = await h.store.reads.listAttempts(run.id, key);
    expect(stored.map((a) => [a.attempt, a.output])).toEqual([
      [1, "answer for s1"],
      [2, "second"],
    ]);
    expect(stored[1]).not.toHaveProperty("rerunAfter");
    // The same request committed again (a retried commit, a second re-run of it) is a duplicate.
    const before = await h.store.reads.listAttempts(run.id);
    await expect(
      h.store.attempts.record(run.id, me.token, [{ ...draft(key), rerunAfter: 1 }]),
    ).rejects.toMatchObject({ code: "E_ALREADY_SCORED" });
    // So is a draft without the marker, and one in the same batch after a re-run.
    await expect(h.store.attempts.record(run.id, me.token, [draft(key)])).rejects.toMatchObject({
      code: "E_ALREADY_SCORED",
    });
    await expect(
      h.store.attempts.record(run.id, me.token, [
        { ...draft(key), rerunAfter: 2 },
        { ...draft(key), rerunAfter: 2 },
      ]),
    ).rejects.toMatchObject({ code: "E_ALREADY_SCORED" });
    expect(await h.store.reads.listAttempts(run.id)).toEqual(before);
    // A re-run error attempt is stored; the key's outcome stays its newest scored attempt.
    await h.store.attempts.record(run.id, me.token, [{ ...errorDraft(key), rerunAfter: 2 }]);
    const page = await h.store.reads.listOutcomes(run.id, { sampleId: "s1" });
    expect(page.entries.find((e) => e.epoch === 1)?.outcome).toMatchObject({ attempt: 2 });
    expect(await h.store.reads.countKeys(run.id)).toMatchObject({ scored: 1, errored: 0 });
  });

  it("refuses a negative or fractional rerunAfter before writing anything", async () => {
    const { run, owner: me } = await newRun(h.store);
    for (const bad of [-1, 0.5]) {
      await expect(
        h.store.attempts.record(run.id, me.token, [
          { ...draft({ sampleId: "s1", epoch: 1 }), rerunAfter: bad },
        ]),
      ).rejects.toMatchObject({ code: "E_INVALID_INPUT" });
    }
    expect(await h.store.reads.listAttempts(run.id)).toEqual([]);
  });

  it("stores an attempt's retries and reads them back from every listing; none stays unknown", async () => {
    const { run, owner: me } = await newRun(h.store);
    const [a, b, c] = [
      draft({ sampleId: "s1", epoch: 1 }, { retries: 3 }),
      errorDraft({ sampleId: "s2", epoch: 1 }, { retries: 0 }),
      // A draft that does not say, as an attempt stored before migration 7 (NULL).
      draft({ sampleId: "s3", epoch: 1 }),
    ];
    await h.store.attempts.record(run.id, me.token, [a!, b!, c!]);
    const retriesOf = (list: readonly { sampleId: string; retries?: number }[]) =>
      list.map((x) => [x.sampleId, "retries" in x ? x.retries : "absent"]);
    const expected = [
      ["s1", 3],
      ["s2", 0],
      ["s3", "absent"],
    ];
    expect(retriesOf(await h.store.reads.listAttempts(run.id))).toEqual(expected);
    expect(retriesOf(await h.store.reads.listAttempts(run.id, { asCommitted: true }))).toEqual(
      expected,
    );
    expect(retriesOf(await h.store.reads.listAttemptHeads(run.id))).toEqual(expected);
    const pages: { sampleId: string; retries?: number }[] = [];
    for await (const page of h.store.reads.attemptHeadPages(run.id, 2)) pages.push(...page);
    expect(retriesOf(pages)).toEqual(expected);
    expect(
      retriesOf((await h.store.reads.listAttemptsAfter(run.id, { after: 0 })).attempts),
    ).toEqual(expected);
    const outcomes = (await h.store.reads.listOutcomes(run.id)).entries.filter(
      (e) => e.epoch === 1,
    );
    expect(retriesOf(outcomes.map((e) => e.outcome!))).toEqual(expected);
    const inputs = (await h.store.reads.listReportInputs([run.id])).get(run.id)!;
    expect(retriesOf(inputs.heads)).toEqual(expected);
  });

  it("refuses a negative or fractional retries count before writing anything", async () => {
    const { run, owner: me } = await newRun(h.store);
    for (const bad of [-1, 0.5]) {
      await expect(
        h.store.attempts.record(run.id, me.token, [
          draft({ sampleId: "s1", epoch: 1 }, { retries: bad }),
        ]),
      ).rejects.toMatchObject({
        code: "E_INVALID_INPUT",
        message: expect.stringMatching(/retries/),
      });
    }
    expect(await h.store.reads.listAttempts(run.id)).toEqual([]);
  });
}

/** Batches refused whole, old fingerprints, and counting keys. */
function refusalAndCountCases(h: HarnessRef): void {
  it("rejects two scored attempts for one key in the same batch", async () => {
    const { run, owner: me } = await newRun(h.store);
    const key = { sampleId: "s3", epoch: 1 };
    await expect(
      h.store.attempts.record(run.id, me.token, [draft(key), draft(key)]),
    ).rejects.toMatchObject({
      code: "E_ALREADY_SCORED",
    });
    expect(await h.store.reads.listAttempts(run.id)).toEqual([]);
  });

  it("rejects an attempt for a sample outside the snapshot and writes nothing", async () => {
    const { run, owner: me } = await newRun(h.store);
    const batch = [draft({ sampleId: "s1", epoch: 1 }), draft({ sampleId: "stranger", epoch: 1 })];
    await expect(h.store.attempts.record(run.id, me.token, batch)).rejects.toMatchObject({
      code: "E_INVALID_INPUT",
    });
    expect(await h.store.reads.listAttempts(run.id)).toEqual([]);
  });

  it.each<[string, Partial<AttemptDraft>]>([
    ["a score outside [0, 1]", { scores: [{ scorer: "exact", value: 1.5 }] }],
    ["a NaN score", { scores: [{ scorer: "exact", value: Number.NaN }] }],
    ["negative tokens", { usage: { inputTokens: -1, outputTokens: 0 } }],
  ])("rejects a batch with %s before writing anything", async (_label, bad) => {
    const { run, owner: me } = await newRun(h.store);
    const batch = [draft({ sampleId: "s1", epoch: 1 }), draft({ sampleId: "s2", epoch: 1 }, bad)];
    await expect(h.store.attempts.record(run.id, me.token, batch)).rejects.toMatchObject({
      code: "E_INVALID_INPUT",
      message: expect.stringContaining('"s2"'),
    });
    expect(await h.store.reads.listAttempts(run.id)).toEqual([]);
  });

  it("does not count a scored attempt for an old fingerprint, and lets the new one be scored", async () => {
    const { run, owner: me } = await newRun(h.store, { config: { epochs: 1 } });
    const key = { sampleId: "s1", epoch: 1 };
    await h.store.attempts.record(run.id, me.token, [draft(key)]);
    expect(await h.store.reads.countKeys(run.id)).toMatchObject({ scored: 1, remaining: 2 });

    await h.store.runs.updateSamples(run.id, me.token, sampleRecords(["s1"], 2));
    expect(await h.store.reads.countKeys(run.id)).toEqual({
      total: 3,
      scored: 0,
      errored: 0,
      remaining: 3,
    });

    const rerun = await h.store.attempts.record(run.id, me.token, [
      draft(key, { fingerprint: fingerprintOf("s1", 2) }),
    ]);
    expect(rerun).toMatchObject([{ attempt: 2, fingerprint: fingerprintOf("s1", 2) }]);
    expect(await h.store.reads.countKeys(run.id)).toEqual({
      total: 3,
      scored: 1,
      errored: 0,
      remaining: 2,
    });
  });

  it("counts keys from the attempts: total = samples × epochs", async () => {
    const { run, owner: me } = await newRun(h.store, {
      ids: ["a", "b", "c", "d"],
      config: { epochs: 3 },
    });
    await h.store.attempts.record(run.id, me.token, [
      draft({ sampleId: "a", epoch: 1 }),
      draft({ sampleId: "a", epoch: 2 }),
      errorDraft({ sampleId: "b", epoch: 1 }),
      errorDraft({ sampleId: "b", epoch: 1 }),
      errorDraft({ sampleId: "c", epoch: 3 }),
      draft({ sampleId: "c", epoch: 3 }),
      errorDraft({ sampleId: "d", epoch: 2 }),
      draft({ sampleId: "d", epoch: 1 }, { fingerprint: "fp:some-older-row" }),
    ]);
    expect(await h.store.reads.countKeys(run.id)).toEqual({
      total: 12,
      scored: 3,
      errored: 2,
      remaining: 9,
    });
  });
}

/** Keys in flight: marked, cleared, and committed with their attempts. */
function inflightCases(h: HarnessRef): void {
  it("marks keys in flight and clears exactly the recorded ones", async () => {
    const { run, owner: me } = await newRun(h.store);
    const keys = [
      { sampleId: "s2", epoch: 1 },
      { sampleId: "s1", epoch: 2 },
      { sampleId: "s1", epoch: 1 },
    ];
    await h.store.runs.markInflight(run.id, me.token, keys);
    await h.store.runs.markInflight(run.id, me.token, [{ sampleId: "s1", epoch: 1 }]);
    expect(await h.store.runs.listInflight(run.id)).toEqual([
      { sampleId: "s1", epoch: 1 },
      { sampleId: "s1", epoch: 2 },
      { sampleId: "s2", epoch: 1 },
    ]);
    await h.store.attempts.record(run.id, me.token, [
      draft({ sampleId: "s1", epoch: 1 }),
      errorDraft({ sampleId: "s2", epoch: 1 }),
    ]);
    expect(await h.store.runs.listInflight(run.id)).toEqual([{ sampleId: "s1", epoch: 2 }]);
  });

  it("marks keys in flight in the same transaction as the attempts it records", async () => {
    const { run, owner: me } = await newRun(h.store);
    await h.store.attempts.record(run.id, me.token, [draft({ sampleId: "s1", epoch: 1 })], {
      inflight: [
        { sampleId: "s2", epoch: 1 },
        { sampleId: "s1", epoch: 1 },
      ],
    });
    // s1#1 was marked and recorded in one commit: only s2#1 is still in flight.
    expect(await h.store.runs.listInflight(run.id)).toEqual([{ sampleId: "s2", epoch: 1 }]);
    await expect(
      h.store.attempts.record(run.id, "not-the-owner", [], {
        inflight: [{ sampleId: "s1", epoch: 2 }],
      }),
    ).rejects.toMatchObject({ code: "E_FENCED" });
    expect(await h.store.runs.listInflight(run.id)).toEqual([{ sampleId: "s2", epoch: 1 }]);
  });
}
