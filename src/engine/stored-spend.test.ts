import { describe, expect, it } from "vitest";
import { storesPerTest } from "../../test/helpers/temp-store.js";
import { draft, newRun } from "../store/contract/fixtures.js";
import type { Store, StoredSpend } from "../store/types.js";
import { Budget } from "./budget.js";
import { followStoredSpend } from "./stored-spend.js";

const store = storesPerTest();

const ids = Array.from({ length: 40 }, (_, i) => `s${String(i).padStart(2, "0")}`);
/** Costs that are exact in binary, so sums in any order are equal. */
const priced = (i: number) => ({ usage: { inputTokens: 1, outputTokens: 1, costUsd: i / 64 } });

/** A store whose spend reads wait, after they have read, until `release` is called. */
function gated(real: Store) {
  let open: () => void = () => {};
  let gate = Promise.resolve();
  const reads: Promise<StoredSpend>[] = [];
  const wrapped: Store = {
    ...real,
    reads: {
      ...real.reads,
      readSpend: async (...args) => {
        const read = real.reads.readSpend(...args);
        reads.push(read);
        const spent = await read;
        await gate;
        return spent;
      },
    },
  };
  return {
    store: wrapped,
    reads,
    hold: () => (gate = new Promise<void>((resolve) => (open = resolve))),
    release: () => open(),
  };
}

describe("followStoredSpend: the budget's spend is the stored rows' sum", () => {
  it("counts each row once, whoever committed it and however reads and commits interleave", async () => {
    const s = store();
    const { run, owner } = await newRun(s, { ids });
    const budget = new Budget({ maxCostUsd: 100 });
    const spend = followStoredSpend(s, run.id, budget);
    await s.attempts.record(run.id, owner.token, [
      draft({ sampleId: ids[0]!, epoch: 1 }, priced(64)),
    ]);
    await spend.start();
    expect(budget.spentUsd).toBe((await s.reads.readSpend(run.id)).costUsd);
    // Commits and looks at once, as a pool of slots and other workers make them.
    const work = ids.slice(1).map(async (sampleId, i) => {
      const looks = [spend.look(), spend.look()];
      await s.attempts.record(run.id, owner.token, [draft({ sampleId, epoch: 1 }, priced(i))]);
      await Promise.all([...looks, spend.look()]);
    });
    await Promise.all(work);
    await spend.look();
    const stored = await s.reads.readSpend(run.id);
    expect(budget.spentUsd).toBe(stored.costUsd);
    expect(budget.spentUsd).toBe(1 + (38 * 39) / 2 / 64);
  });

  it("a look asked while a read is under way sees what was committed before it was asked", async () => {
    const real = store();
    const { run, owner } = await newRun(real, { ids });
    const g = gated(real);
    const budget = new Budget({ maxCostUsd: 100 });
    const spend = followStoredSpend(g.store, run.id, budget);
    await spend.start();
    g.hold();
    const first = spend.look();
    await new Promise((resolve) => setImmediate(resolve));
    expect(g.reads).toHaveLength(2); // the first look's read has read, and waits
    await real.attempts.record(run.id, owner.token, [
      draft({ sampleId: "s01", epoch: 1 }, priced(32)),
    ]);
    const second = spend.look();
    const third = spend.look();
    g.release();
    await first;
    expect(budget.spentUsd).toBe(0);
    await Promise.all([second, third]);
    expect(budget.spentUsd).toBe(0.5);
    // The two looks asked during the first read shared one read.
    expect(g.reads).toHaveLength(3);
  });

  it("a failed read is skipped: the spend stays the last read's, and the next read catches up", async () => {
    const real = store();
    const { run, owner } = await newRun(real, { ids });
    let fail = false;
    const flaky: Store = {
      ...real,
      reads: {
        ...real.reads,
        readSpend: (...args) =>
          fail ? Promise.reject(new Error("store down")) : real.reads.readSpend(...args),
      },
    };
    const budget = new Budget({ maxCostUsd: 100 });
    const spend = followStoredSpend(flaky, run.id, budget);
    await spend.start();
    await real.attempts.record(run.id, owner.token, [
      draft({ sampleId: "s01", epoch: 1 }, priced(16)),
    ]);
    fail = true;
    await spend.look();
    expect(budget.spentUsd).toBe(0);
    fail = false;
    await real.attempts.record(run.id, owner.token, [
      draft({ sampleId: "s02", epoch: 1 }, priced(8)),
    ]);
    await spend.look();
    expect(budget.spentUsd).toBe(0.375);
  });
});
