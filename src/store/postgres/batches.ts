import {
  BATCH_SQL,
  recordParams,
  toSubmission,
  updateParams,
  type BatchRow,
} from "../batch-rows.js";
import type { BatchStore } from "../types.js";
import type { PostgresContext } from "./context.js";
import { statement } from "./driver.js";

/** The batch submissions' statements (SQL shared with SQLite). */
const batchStatements = {
  record: statement(BATCH_SQL.record),
  update: statement(BATCH_SQL.update),
  list: statement(BATCH_SQL.list),
};

/** Batch submissions (`BatchStore`) in PostgreSQL: every worker and machine of it sees them. */
export function postgresBatches(c: PostgresContext): BatchStore {
  const s = batchStatements;
  return {
    async record(submission) {
      await c.guard(() => s.record.run(c.pool, recordParams(submission)));
    },
    async update(nonce, change, at) {
      await c.guard(() => s.update.run(c.pool, updateParams(nonce, change, at)));
    },
    async list(runId) {
      return c.guard(async () =>
        (await s.list.rows<BatchRow>(c.pool, { runId })).map(toSubmission),
      );
    },
  };
}
