import type { SpendCursor, StoredSpend } from "./types.js";

/** The row a `readSpend` statement gives: each table's part of the spend and its newest row. */
export interface SpendRow {
  attempt_cost: number;
  priced: number;
  last_attempt: number | null;
  scoring_cost: number;
  last_scoring: number | null;
}

/** Where a read with no cursor starts: before the first row of either table. */
export const SPEND_START: SpendCursor = { attempts: 0, scorings: 0 };

/**
 * A spend read's row as the domain's `StoredSpend`: the cursor moves to the newest rows read, and
 * stays where it was for a table that had none after it.
 *
 * @example toStoredSpend({ attempt_cost: 0.2, priced: 2, last_attempt: 9, scoring_cost: 0.01, last_scoring: null }, SPEND_START)
 * // { costUsd: 0.21, pricedAttempts: 2, cursor: { attempts: 9, scorings: 0 } }
 */
export function toStoredSpend(row: SpendRow | undefined, after: SpendCursor): StoredSpend {
  if (!row) return { costUsd: 0, pricedAttempts: 0, cursor: after };
  return {
    costUsd: Number(row.attempt_cost) + Number(row.scoring_cost),
    pricedAttempts: Number(row.priced),
    cursor: {
      attempts: row.last_attempt === null ? after.attempts : Number(row.last_attempt),
      scorings: row.last_scoring === null ? after.scorings : Number(row.last_scoring),
    },
  };
}
