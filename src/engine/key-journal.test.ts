import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { storesPerTest } from "../../test/helpers/temp-store.js";
import { keyString } from "../core/keys.js";
import { errorDraft, newRun } from "../store/contract/fixtures.js";
import type { StepDiscard, StepDraft, Store } from "../store/types.js";
import { KeyJournals } from "./key-journal.js";
import { StepJournal } from "./step-journal.js";

const store = storesPerTest();

function step(sampleId: string, index: number): StepDraft {
  return {
    sampleId,
    epoch: 1,
    step: index,
    name: `tool-${index}`,
    kind: "step",
    inputHash: createHash("sha256")
      .update(JSON.stringify({ n: index }))
      .digest("hex"),
    input: { n: index },
    result: { ok: index },
    error: null,
    usage: null,
    recordedAt: "2025-01-02T00:00:00.000Z",
    durationMs: 5,
  };
}

/** A run whose interrupted execution left open entries for s1 and s2; s2 changed since. */
async function interrupted() {
  const s = store();
  const { run, owner } = await newRun(s);
  await s.journal.record(run.id, owner.token, [step("s1", 0), step("s1", 1), step("s2", 0)]);
  const writes: (StepDraft | StepDiscard)[] = [];
  const open = (options: {
    journaled?: boolean;
    resumed?: boolean;
    leased?: boolean;
    store?: Store;
  }) =>
    KeyJournals.open({
      store: options.store ?? s,
      runId: run.id,
      plan: { changed: ["s2"], replayFrom: new Map() },
      writer: { writeStep: async (draft) => void writes.push(draft) },
      journaled: options.journaled ?? true,
      resumed: options.resumed ?? true,
      leased: options.leased ?? false,
    });
  return { s, open, writes };
}

describe("KeyJournals", () => {
  it("a resume replays a key's open entries; a changed sample's are discarded", async () => {
    const { open } = await interrupted();
    const journals = await open({});
    const first = await journals.of({ sampleId: "s1", epoch: 1 });
    expect(first?.entries.map((e) => e.step)).toEqual([0, 1]);
    expect(first?.discardOpen).toBe(false);

    expect(await journals.of({ sampleId: "s2", epoch: 1 })).toMatchObject({
      entries: [],
      discardOpen: true,
    });
    expect(await journals.of({ sampleId: "s3", epoch: 1 })).toMatchObject({
      entries: [],
      discardOpen: false,
    });
  });

  it("a fresh start reads no journal keys; a worker reads each key's entries as it leases it", async () => {
    const { s, open } = await interrupted();
    let keyReads = 0;
    const counted: Store = {
      ...s,
      journal: {
        ...s.journal,
        keys: (...args) => {
          keyReads++;
          return s.journal.keys(...args);
        },
      },
    };
    const fresh = await open({ resumed: false, store: counted });
    expect((await fresh.of({ sampleId: "s1", epoch: 1 }))?.entries).toEqual([]);
    const worker = await open({ leased: true, store: counted });
    expect((await worker.of({ sampleId: "s1", epoch: 1 }))?.entries).toHaveLength(2);
    expect(keyReads).toBe(0);
  });

  it("an unjournaled solver gets no journal; steps are written through the writer and counted when done", async () => {
    const { open, writes } = await interrupted();
    expect(
      await (await open({ journaled: false })).of({ sampleId: "s1", epoch: 1 }),
    ).toBeUndefined();
    const journals = await open({});
    const journal = (await journals.of({ sampleId: "s1", epoch: 1 }))!;
    // The attempt's journal replays s1's first step, then diverges at its second.
    const steps = new StepJournal({
      key: { sampleId: "s1", epoch: 1 },
      entries: journal.entries,
      write: journal.write,
      redact: (value) => ({ value, found: [] }),
    });
    const run = async () => ({ result: { ok: "new" } });
    expect(await steps.step("step", "tool-0", { n: 0 }, run, () => null)).toMatchObject({
      replayed: true,
      result: { ok: 0 },
    });
    expect(await steps.step("step", "tool-1", { n: 99 }, run, () => null)).toMatchObject({
      replayed: false,
    });
    expect(writes).toMatchObject([{ sampleId: "s1", step: 1, truncate: true }]);
    journal.onDone?.(steps);
    expect(journals.counts).toEqual({ replayed: 1, diverged: 1, reused: [] });
  });

  it("a retry replays its errored attempt's entries but a failed step at their end; a resume the latest errored attempt's, unless a later execution left open entries", async () => {
    const s = store();
    const { run, owner } = await newRun(s);
    const s1 = { sampleId: "s1", epoch: 1 };
    const s3 = { sampleId: "s3", epoch: 1 };
    const failed = { ...step("s1", 2), result: null, error: { message: "tool broke" } };
    // s1: attempt 1 ran three steps, the third failed; attempt 2 (the retry) ran two.
    await s.journal.record(run.id, owner.token, [step("s1", 0), step("s1", 1), failed]);
    await s.attempts.record(run.id, owner.token, [errorDraft(s1)]);
    await s.journal.record(run.id, owner.token, [step("s1", 0), step("s1", 1)]);
    await s.attempts.record(run.id, owner.token, [errorDraft(s1)]);
    // s1 epoch 2: a step failed and the solver went on, then the attempt failed on a call.
    const s1e2 = { sampleId: "s1", epoch: 2 };
    const told = { ...step("s1", 1), epoch: 2, result: null, error: { message: "told" } };
    await s.journal.record(run.id, owner.token, [{ ...step("s1", 0), epoch: 2 }, told]);
    await s.journal.record(run.id, owner.token, [{ ...step("s1", 2), epoch: 2 }]);
    await s.attempts.record(run.id, owner.token, [errorDraft(s1e2)]);
    // s3: attempt 1 errored after one step; a later execution was interrupted after two.
    await s.journal.record(run.id, owner.token, [step("s3", 0)]);
    await s.attempts.record(run.id, owner.token, [errorDraft(s3)]);
    await s.journal.record(run.id, owner.token, [step("s3", 0), step("s3", 1)]);
    const open = (replayFrom: Map<string, number>, resumed = true) =>
      KeyJournals.open({
        store: s,
        runId: run.id,
        plan: { changed: ["s2"], replayFrom },
        writer: { writeStep: async () => {} },
        journaled: true,
        resumed,
        leased: false,
      });
    const steps = (j: Awaited<ReturnType<KeyJournals["of"]>>) =>
      j?.entries.map((e) => [e.attempt, e.step]);

    // The in-run retry of attempt 1: its steps that succeeded, written again as the retry's.
    const inRun = await open(new Map(), false);
    const retry = await inRun.of(s1, 1);
    expect(steps(retry)).toEqual([
      [1, 0],
      [1, 1],
    ]);
    expect(retry).toMatchObject({ reopen: true, discardOpen: false });
    expect(steps(await inRun.of(s1e2, 1))).toEqual([
      [1, 0],
      [1, 1],
      [1, 2],
    ]);

    // A resume: the plan names each errored key's latest attempt; open entries come after it.
    const resume = await open(
      new Map([
        [keyString(s1), 2],
        [keyString(s3), 1],
        [keyString({ sampleId: "s2", epoch: 1 }), 1],
      ]),
    );
    expect(steps(await resume.of(s1))).toEqual([
      [2, 0],
      [2, 1],
    ]);
    const interrupted = await resume.of(s3);
    expect(steps(interrupted)).toEqual([
      [null, 0],
      [null, 1],
    ]);
    expect(interrupted?.reopen).toBe(false);
    // A changed sample replays nothing (`--rerun-changed`), nor a key the plan does not name
    // (a `--rerun` of a scored key, a fresh key).
    expect(await resume.of({ sampleId: "s2", epoch: 1 })).toMatchObject({
      entries: [],
      reopen: false,
    });
    expect(await (await open(new Map())).of(s1)).toMatchObject({ entries: [], reopen: false });
  });

  it("a replayed errored attempt's entries are written again as open ones, their calls' usage marked reused and only carried by the new attempt", async () => {
    const s = store();
    const { run, owner } = await newRun(s);
    const s1 = { sampleId: "s1", epoch: 1 };
    const usage = { inputTokens: 10, outputTokens: 5, costUsd: 0.001 };
    const chat = { ...step("s1", 1), kind: "chat" as const, name: "chat", usage };
    await s.journal.record(run.id, owner.token, [step("s1", 0), chat]);
    await s.attempts.record(run.id, owner.token, [errorDraft(s1)]);
    const writes: (StepDraft | StepDiscard)[] = [];
    const entries = await s.journal.list(run.id, { ...s1, attempt: 1 });
    const journal = new StepJournal({
      key: s1,
      entries,
      reopen: true,
      write: async (draft) => {
        writes.push(draft);
        await s.journal.record(run.id, owner.token, "fromStep" in draft ? [] : [draft]);
      },
      redact: (value) => ({ value, found: [] }),
    });
    const never = async () => {
      throw new Error("a replayed step ran");
    };
    expect(await journal.step("step", "tool-0", { n: 0 }, never, () => null)).toMatchObject({
      replayed: true,
      result: { ok: 0 },
    });
    // The errored attempt's usage counts the call: the new one carries it, counting nothing.
    expect(await journal.step("chat", "chat", { n: 1 }, never, () => null)).toMatchObject({
      replayed: true,
      usage,
      replayedUsage: { inputTokens: 0, outputTokens: 0, costUsd: 0, carried: usage },
    });
    expect(journal.reused).toEqual([usage]);
    const reopened = await s.journal.list(run.id, { ...s1, attempt: "open" });
    expect(reopened.map((e) => [e.step, e.usage])).toEqual([
      [0, null],
      [1, { ...usage, reused: usage }],
    ]);
    expect(writes).toHaveLength(2);
  });
});
