import { describe, expect, it } from "vitest";
import type { StepDraft } from "../types.js";
import { draft, errorDraft, type HarnessRef, newRun, owner } from "./fixtures.js";

const k11 = { sampleId: "s1", epoch: 1 };
const k21 = { sampleId: "s2", epoch: 1 };

function step(key: typeof k11, index: number, overrides: Partial<StepDraft> = {}): StepDraft {
  return {
    ...key,
    step: index,
    name: `tool-${index}`,
    kind: "step",
    inputHash: String(index % 10).repeat(64),
    input: { n: index },
    result: { ok: index },
    error: null,
    usage: null,
    recordedAt: "2025-01-02T00:00:00.000Z",
    durationMs: 5,
    ...overrides,
  };
}

/** The step journal: open entries until the key's attempt commits, then its trajectory. */
export function describeJournalContract(h: HarnessRef): void {
  describe("journal", () => {
    entryCases(h);
    discardFenceAndPruneCases(h);
  });
}

/** Open entries and the attempts that bind them. */
function entryCases(h: HarnessRef): void {
  it("keeps open entries in step order, with results, errors and usage as written", async () => {
    const { run, owner: me } = await newRun(h.store);
    const chat = step(k11, 1, {
      kind: "chat",
      name: "chat",
      input: { model: "m", messages: [{ role: "user", content: "hi" }] },
      result: { content: "hello", model: "m" },
      usage: { inputTokens: 7, outputTokens: 2, costUsd: 0.001 },
    });
    const failed = step(k11, 2, {
      result: null,
      error: { message: "tool broke", type: "provider", status: 503 },
      redacted: ["OPENAI_API_KEY"],
    });
    await h.store.journal.record(run.id, me.token, [step(k11, 0), chat]);
    await h.store.journal.record(run.id, me.token, [failed, step(k21, 0)]);

    const open = await h.store.journal.list(run.id, { ...k11, attempt: "open" });
    expect(open).toEqual([
      { runId: run.id, attempt: null, ...step(k11, 0) },
      { runId: run.id, attempt: null, ...chat },
      { runId: run.id, attempt: null, ...failed },
    ]);
    expect(await h.store.journal.keys(run.id)).toEqual([k11, k21]);
  });

  it("lists the entries of a range of sample ids, both ends included", async () => {
    const { run, owner: me } = await newRun(h.store, { ids: ["a", "b", "c", "d"] });
    const keys = ["a", "b", "c", "d"].map((sampleId) => ({ sampleId, epoch: 1 }));
    await h.store.journal.record(
      run.id,
      me.token,
      keys.map((key) => step(key, 0)),
    );
    const ids = async (filter: { fromSampleId?: string; toSampleId?: string }) =>
      (await h.store.journal.list(run.id, filter)).map((e) => e.sampleId);
    expect(await ids({ fromSampleId: "b", toSampleId: "c" })).toEqual(["b", "c"]);
    expect(await ids({ fromSampleId: "c" })).toEqual(["c", "d"]);
    expect(await ids({ toSampleId: "a" })).toEqual(["a"]);
  });

  it("binds a key's open entries to the attempt that commits, and keeps them", async () => {
    const { run, owner: me } = await newRun(h.store);
    await h.store.journal.record(run.id, me.token, [step(k11, 0), step(k11, 1), step(k21, 0)]);
    const [first] = await h.store.attempts.record(run.id, me.token, [errorDraft(k11)]);
    expect(first!.attempt).toBe(1);
    // The retry journals afresh: its entries are open, the first attempt's are its own.
    await h.store.journal.record(run.id, me.token, [step(k11, 0, { name: "retry" })]);
    expect(await h.store.journal.keys(run.id)).toEqual([k11, k21]);
    await h.store.attempts.record(run.id, me.token, [draft(k11)]);

    const bound = await h.store.journal.list(run.id, { ...k11, attempt: 1 });
    expect(bound.map((e) => [e.attempt, e.step, e.name])).toEqual([
      [1, 0, "tool-0"],
      [1, 1, "tool-1"],
    ]);
    const all = await h.store.journal.list(run.id, k11);
    expect(all.map((e) => [e.attempt, e.name])).toEqual([
      [1, "tool-0"],
      [1, "tool-1"],
      [2, "retry"],
    ]);
    expect(await h.store.journal.keys(run.id)).toEqual([k21]);
  });

  it("writes entries committed with attempts first, so the attempt binds its own", async () => {
    const { run, owner: me } = await newRun(h.store);
    await h.store.journal.record(run.id, me.token, [step(k11, 0), step(k11, 1)]);
    // k11's last step, k21's first, and a discard of k11's step 1 on: one transaction.
    const [stored] = await h.store.attempts.record(run.id, me.token, [draft(k11)], {
      steps: {
        drafts: [step(k11, 1, { name: "last", truncate: true }), step(k21, 0)],
        discard: [],
      },
    });
    expect(stored!.attempt).toBe(1);
    const bound = await h.store.journal.list(run.id, { ...k11, attempt: 1 });
    expect(bound.map((e) => [e.step, e.name])).toEqual([
      [0, "tool-0"],
      [1, "last"],
    ]);
    // k21 has no attempt yet: its entry stays open, for a resume to replay.
    expect(await h.store.journal.keys(run.id)).toEqual([k21]);
    await h.store.attempts.record(run.id, me.token, [errorDraft(k21)], {
      steps: { drafts: [], discard: [{ ...k21, fromStep: 0 }] },
    });
    expect(await h.store.journal.list(run.id, k21)).toEqual([]);
  });

  it("refuses a former owner's batch through the store it committed with, writing nothing", async () => {
    const { run, owner: old } = await newRun(h.store);
    await h.store.attempts.record(run.id, old.token, [draft(k11)]);
    expect(await h.store.runs.claim(run.id, owner("next"), old.token)).toBe(true);
    const stored = async () => ({
      attempts: await h.store.reads.listAttempts(run.id),
      inflight: await h.store.runs.listInflight(run.id),
      journal: await h.store.journal.list(run.id),
    });
    const before = await stored();
    const extras = {
      inflight: [{ sampleId: "s3", epoch: 1 }],
      steps: { drafts: [step(k21, 0)], discard: [] },
    };
    await expect(
      h.store.attempts.record(run.id, old.token, [errorDraft(k21)], extras),
    ).rejects.toMatchObject({ code: "E_FENCED" });
    expect(await stored()).toEqual(before);
  });

  it("writes neither entries nor attempts of a batch that is refused", async () => {
    const { run, owner: old } = await newRun(h.store);
    expect(await h.store.runs.claim(run.id, owner("next"), old.token)).toBe(true);
    const steps = { drafts: [step(k11, 0)], discard: [] };
    await expect(
      h.store.attempts.record(run.id, old.token, [draft(k11)], { steps }),
    ).rejects.toMatchObject({ code: "E_FENCED" });
    const { run: mine, owner: me } = await newRun(h.store);
    const bad = { drafts: [step(k11, 0), step(k11, 1, { inputHash: "nope" })], discard: [] };
    await expect(
      h.store.attempts.record(mine.id, me.token, [draft(k11)], { steps: bad }),
    ).rejects.toMatchObject({ code: "E_INVALID_INPUT" });
    for (const id of [run.id, mine.id]) {
      expect(await h.store.journal.list(id)).toEqual([]);
      expect(await h.store.reads.listAttempts(id)).toEqual([]);
    }
  });

  it("rejects an in-flight mark of a sample outside the snapshot and writes nothing of its batch", async () => {
    const { run, owner: me } = await newRun(h.store);
    // A first commit: PostgreSQL's later commits of an owned run take the pipelined path.
    await h.store.attempts.record(run.id, me.token, [draft({ sampleId: "s1", epoch: 1 })]);
    const inflight = [{ sampleId: "stranger", epoch: 1 }];
    await expect(
      h.store.attempts.record(run.id, me.token, [draft({ sampleId: "s2", epoch: 1 })], {
        inflight,
      }),
    ).rejects.toMatchObject({ code: "E_INVALID_INPUT", message: /"stranger"/ });
    expect((await h.store.reads.listAttempts(run.id)).map((a) => a.sampleId)).toEqual(["s1"]);
    expect(await h.store.runs.listInflight(run.id)).toEqual([]);
  });
}

/** Discarding diverged entries, fencing, refusing malformed ones, pruning. */
function discardFenceAndPruneCases(h: HarnessRef): void {
  it("discards open entries from a diverged step on, and replaces one at the same step", async () => {
    const { run, owner: me } = await newRun(h.store);
    await h.store.journal.record(
      run.id,
      me.token,
      [0, 1, 2, 3].map((i) => step(k11, i)),
    );
    await h.store.journal.record(run.id, me.token, [
      step(k11, 1, { name: "other", truncate: true }),
    ]);
    await h.store.journal.record(run.id, me.token, [step(k21, 0), step(k21, 0, { name: "again" })]);
    const names = async (key: typeof k11) =>
      (await h.store.journal.list(run.id, { ...key, attempt: "open" })).map((e) => e.name);
    expect(await names(k11)).toEqual(["tool-0", "other"]);
    expect(await names(k21)).toEqual(["again"]);
    // A discard drops a key's open entries from a step on, with no entry of its own.
    await h.store.journal.record(run.id, me.token, [], [{ ...k11, fromStep: 1 }]);
    expect(await names(k11)).toEqual(["tool-0"]);
  });

  it("rejects a stale owner's entries with E_FENCED and writes nothing", async () => {
    const { run, owner: old } = await newRun(h.store);
    const next = owner("next");
    expect(await h.store.runs.claim(run.id, next, old.token)).toBe(true);
    await expect(
      h.store.journal.record(run.id, old.token, [step(k11, 0), step(k11, 1)]),
    ).rejects.toMatchObject({ code: "E_FENCED" });
    expect(await h.store.journal.list(run.id)).toEqual([]);
    await h.store.journal.record(run.id, next.token, [step(k11, 0)]);
    expect(await h.store.journal.list(run.id)).toHaveLength(1);
  });

  it("refuses a malformed entry (E_INVALID_INPUT) and writes none of the batch", async () => {
    const { run, owner: me } = await newRun(h.store);
    const bad = step(k11, 1, { inputHash: "nope" });
    await expect(
      h.store.journal.record(run.id, me.token, [step(k11, 0), bad]),
    ).rejects.toMatchObject({
      code: "E_INVALID_INPUT",
    });
    expect(await h.store.journal.list(run.id)).toEqual([]);
  });

  it("prunes committed attempts' journals and leaves open entries", async () => {
    const { run, owner: me } = await newRun(h.store);
    await h.store.journal.record(run.id, me.token, [step(k11, 0), step(k11, 1), step(k21, 0)]);
    await h.store.attempts.record(run.id, me.token, [draft(k11)]);
    expect(await h.store.journal.prune(run.id)).toBe(2);
    expect((await h.store.journal.list(run.id)).map((e) => e.sampleId)).toEqual(["s2"]);
    expect(await h.store.journal.prune(run.id)).toBe(0);
  });

  it("prunes all but the journal of a key whose latest attempt errored: a resume replays it", async () => {
    const { run, owner: me } = await newRun(h.store);
    await h.store.journal.record(run.id, me.token, [step(k11, 0), step(k11, 1), step(k21, 0)]);
    await h.store.attempts.record(run.id, me.token, [errorDraft(k11), errorDraft(k21)]);
    // s1's retry errors again, s2's scores.
    await h.store.journal.record(run.id, me.token, [step(k11, 0), step(k21, 0)]);
    await h.store.attempts.record(run.id, me.token, [errorDraft(k11), draft(k21)]);
    expect(await h.store.journal.prune(run.id)).toBe(4);
    const left = await h.store.journal.list(run.id);
    expect(left.map((e) => [e.sampleId, e.attempt, e.step])).toEqual([["s1", 2, 0]]);
    expect(await h.store.journal.prune(run.id, "failed")).toBe(0);
  });

  it("prunes with keep 'failed': scored attempts' journals go, errored ones' and open entries stay", async () => {
    const k31 = { sampleId: "s3", epoch: 1 };
    const { run, owner: me } = await newRun(h.store);
    await h.store.journal.record(run.id, me.token, [step(k11, 0), step(k11, 1), step(k21, 0)]);
    await h.store.attempts.record(run.id, me.token, [draft(k11), errorDraft(k21)]);
    // s2's retry scores: its first (errored) attempt's journal stays, the retry's goes.
    await h.store.journal.record(run.id, me.token, [step(k21, 0, { name: "retry" }), step(k31, 0)]);
    await h.store.attempts.record(run.id, me.token, [draft(k21)]);
    expect(await h.store.journal.prune(run.id, "failed")).toBe(3);
    const left = await h.store.journal.list(run.id);
    expect(left.map((e) => [e.sampleId, e.attempt, e.name])).toEqual([
      ["s2", 1, "tool-0"],
      ["s3", null, "tool-0"],
    ]);
    expect(await h.store.journal.prune(run.id, "failed")).toBe(0);
    expect(await h.store.journal.prune(run.id, "open")).toBe(1);
    expect((await h.store.journal.list(run.id)).map((e) => e.sampleId)).toEqual(["s3"]);
  });
}
