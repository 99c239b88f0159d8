import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { storesPerTest } from "../../test/helpers/temp-store.js";
import { newRun } from "../store/contract/fixtures.js";
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
      plan: { changed: ["s2"] },
      writer: { writeStep: async (draft) => void writes.push(draft) },
      journaled: options.journaled ?? true,
      resumed: options.resumed ?? true,
      leased: options.leased ?? false,
    });
  return { s, open, writes };
}

describe("KeyJournals", () => {
  it("a resume replays a key's open entries on its first attempt only; a changed sample's are discarded", async () => {
    const { open } = await interrupted();
    const journals = await open({});
    const first = await journals.of({ sampleId: "s1", epoch: 1 }, true);
    expect(first?.entries.map((e) => e.step)).toEqual([0, 1]);
    expect(first?.discardOpen).toBe(false);
    const retry = await journals.of({ sampleId: "s1", epoch: 1 }, false);
    expect(retry).toMatchObject({ entries: [], discardOpen: false });
    expect(await journals.of({ sampleId: "s2", epoch: 1 }, true)).toMatchObject({
      entries: [],
      discardOpen: true,
    });
    expect(await journals.of({ sampleId: "s3", epoch: 1 }, true)).toMatchObject({
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
    expect((await fresh.of({ sampleId: "s1", epoch: 1 }, true))?.entries).toEqual([]);
    const worker = await open({ leased: true, store: counted });
    expect((await worker.of({ sampleId: "s1", epoch: 1 }, true))?.entries).toHaveLength(2);
    expect(keyReads).toBe(0);
  });

  it("an unjournaled solver gets no journal; steps are written through the writer and counted when done", async () => {
    const { open, writes } = await interrupted();
    expect(
      await (await open({ journaled: false })).of({ sampleId: "s1", epoch: 1 }, true),
    ).toBeUndefined();
    const journals = await open({});
    const journal = (await journals.of({ sampleId: "s1", epoch: 1 }, true))!;
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
});
