import type { SpendCursor, Store } from "../store/types.js";
import type { Budget } from "./budget.js";

/** Keeps a budget's known spend what the run's stored rows add up to. */
export interface StoredSpendFollower {
  /** The first read: every stored row of the run. Throws when the store cannot be read. */
  start(): Promise<void>;
  /**
   * A read of what was committed since the last one, by anyone (this process, the run's other
   * workers), attempts and scorings alike. It sees every commit that finished before it was
   * asked for. A read that fails is skipped: the budget keeps the spend of the last one.
   */
  look(): Promise<void>;
}

/**
 * Follows a run's stored spend for its budget: one read of every row (`start`), then at each
 * `look` the rows committed after the last read's cursor (`Store.readSpend`), added to the sum.
 * Each stored row is counted once, however the reads and the commits interleave, so the budget's
 * spend is always a sum of stored rows, never a tally that can drift.
 *
 * Reads run one at a time (each continues from the previous one's cursor). A look asked while a
 * read is under way waits for the next read, which begins after it: so a slot that just committed
 * a key sees that key's cost. Looks asked while that next read has not begun share it, so a pool
 * of slots dispatching at once costs one read.
 *
 * @example
 * const spend = followStoredSpend(store, run.id, budget);
 * await spend.start();
 * await spend.look(); // budget.spentUsd is the stored sum as of now
 */
export function followStoredSpend(
  store: Pick<Store, "reads">,
  runId: string,
  budget: Budget,
): StoredSpendFollower {
  let costUsd = 0;
  let pricedAttempts = 0;
  let cursor: SpendCursor | undefined;
  let tail: Promise<void> = Promise.resolve();
  let queued: Promise<void> | undefined;
  const read = async () => {
    const spent = await store.reads.readSpend(runId, cursor);
    costUsd += spent.costUsd;
    pricedAttempts += spent.pricedAttempts;
    cursor = spent.cursor;
    budget.know({ costUsd, pricedAttempts });
  };
  const next = (): Promise<void> => {
    if (!queued) {
      queued = tail.then(() => {
        queued = undefined;
        return read();
      });
      tail = queued.catch(() => {});
    }
    return queued;
  };
  return {
    start: next,
    look: () => next().catch(() => {}),
  };
}
