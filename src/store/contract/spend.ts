import { describe, expect, it } from "vitest";
import { requireLeases, type StoredSpend } from "../types.js";
import {
  draft,
  errorDraft,
  newRun,
  owner,
  runConfig,
  sampleRecords,
  scoringOf,
  type HarnessRef,
} from "./fixtures.js";

const priced = (costUsd: number) => ({ usage: { inputTokens: 10, outputTokens: 2, costUsd } });
const judged = (costUsd: number) => ({ usage: { inputTokens: 40, outputTokens: 4, costUsd } });

/** A run's spend read from its rows: what the spend cap and the notes count. */
export function describeSpendContract(h: HarnessRef): void {
  describe("spend", () => {
    it("sums the executed attempts' and the scorings' known cost, and counts priced attempts", async () => {
      const { run, owner: me } = await newRun(h.store, { ids: ["s1", "s2", "s3", "s4", "s5"] });
      expect(await h.store.reads.readSpend(run.id)).toMatchObject({
        costUsd: 0,
        pricedAttempts: 0,
      });
      await h.store.attempts.record(run.id, me.token, [
        draft({ sampleId: "s1", epoch: 1 }, priced(0.25)),
        // Tokens at no known price: an attempt, but not a priced one.
        draft({ sampleId: "s2", epoch: 1 }, { usage: { inputTokens: 10, outputTokens: 2 } }),
        errorDraft({ sampleId: "s3", epoch: 1 }),
        // Imported: paid for elsewhere, not this run's spend.
        draft(
          { sampleId: "s4", epoch: 1 },
          { ...priced(4), provenance: { kind: "imported", source: "other.json" } },
        ),
      ]);
      await h.store.attempts.recordScorings(run.id, me.token, [
        scoringOf({ sampleId: "s1", epoch: 1 }, judged(0.125)),
        scoringOf({ sampleId: "s2", epoch: 1 }),
      ]);
      expect(await h.store.reads.readSpend(run.id)).toMatchObject({
        costUsd: 0.375,
        pricedAttempts: 1,
      });
    });

    it("read on from a cursor, counts each row once, and only the run's own", async () => {
      const { run, owner: me } = await newRun(h.store, { ids: ["s1", "s2", "s3"] });
      const other = await newRun(h.store, { ids: ["s1", "s2", "s3"] });
      const write = async (sampleId: string, cost: number) => {
        await h.store.attempts.record(run.id, me.token, [
          draft({ sampleId, epoch: 1 }, priced(cost)),
        ]);
        await h.store.attempts.record(other.run.id, other.owner.token, [
          draft({ sampleId, epoch: 1 }, priced(100)),
        ]);
      };
      await write("s1", 0.5);
      const first = await h.store.reads.readSpend(run.id);
      expect(first).toMatchObject({ costUsd: 0.5, pricedAttempts: 1 });
      // Nothing new: nothing counted, and the cursor stays usable.
      const idle = await h.store.reads.readSpend(run.id, first.cursor);
      expect(idle).toMatchObject({ costUsd: 0, pricedAttempts: 0 });

      await write("s2", 0.25);
      await h.store.attempts.recordScorings(run.id, me.token, [
        scoringOf({ sampleId: "s1", epoch: 1 }, judged(0.0625)),
      ]);
      const second = await h.store.reads.readSpend(run.id, idle.cursor);
      expect(second).toMatchObject({ costUsd: 0.3125, pricedAttempts: 1 });
      await write("s3", 0.125);
      const third = await h.store.reads.readSpend(run.id, second.cursor);
      expect(third).toMatchObject({ costUsd: 0.125, pricedAttempts: 1 });
      expect(await h.store.reads.readSpend(run.id, third.cursor)).toMatchObject({ costUsd: 0 });

      const chained = [first, idle, second, third].reduce(add);
      expect(chained.costUsd).toBe((await h.store.reads.readSpend(run.id)).costUsd);
      expect(chained.pricedAttempts).toBe(3);
    });

    it("closes a distributed run with a note written from its whole spend, read under the close", async () => {
      const runId = "spent-dist";
      const created = await h.store.runs.create({
        id: runId,
        config: runConfig({ distributed: true, epochs: 1 }),
        samples: sampleRecords(["s1", "s2", "s3"]),
        owner: owner("creator"),
      });
      await h.store.runs.release(runId, created.owner!.token, "interrupted");
      await requireLeases(h.store).reopen(runId);
      const worker = { ...owner("w"), concurrency: 2, leaseMs: 60_000 };
      await requireLeases(h.store).register(runId, worker);
      const { keys } = await requireLeases(h.store).claim(runId, worker.token, 2);
      await h.store.attempts.record(runId, worker.token, [draft(keys[0]!, priced(0.5))]);
      const seen: StoredSpend[] = [];
      const note = (spent: StoredSpend) => {
        seen.push(spent);
        return `spent ${spent.costUsd} on ${spent.pricedAttempts}`;
      };
      // A live lease: the run stays running, and no note is written.
      expect(await requireLeases(h.store).closeRun(runId, "interrupted", note)).toBe(false);
      expect(await h.store.runs.get(runId)).toMatchObject({ status: "running" });

      await h.store.attempts.record(runId, worker.token, [draft(keys[1]!, priced(0.25))]);
      await requireLeases(h.store).leave(runId, worker.token, "stopped");
      expect(await requireLeases(h.store).closeRun(runId, "interrupted", note)).toBe(true);
      expect(await h.store.runs.get(runId)).toMatchObject({
        status: "interrupted",
        note: "spent 0.75 on 2",
      });
      expect(seen.at(-1)).toMatchObject({ costUsd: 0.75, pricedAttempts: 2 });
    });
  });
}

function add(a: StoredSpend, b: StoredSpend): StoredSpend {
  return {
    costUsd: a.costUsd + b.costUsd,
    pricedAttempts: a.pricedAttempts + b.pricedAttempts,
    cursor: b.cursor,
  };
}
