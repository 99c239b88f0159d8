import {
  BATCH_SQL,
  recordParams,
  toSubmission,
  updateParams,
  type BatchRow,
} from "../batch-rows.js";
import type { BatchStore } from "../types.js";
import type { SqliteContext } from "./context.js";
import { prepareTable, sql } from "./statements.js";

/** The batch submissions' statements (SQL shared with PostgreSQL). */
const SQLITE_BATCH_STATEMENTS = {
  record: sql(BATCH_SQL.record),
  update: sql(BATCH_SQL.update),
  list: sql<BatchRow>(BATCH_SQL.list),
};

/** Batch submissions (`BatchStore`) in SQLite; each write is its own durable transaction. */
export function sqliteBatches(c: SqliteContext): BatchStore {
  let prepared: ReturnType<typeof prepareTable<typeof SQLITE_BATCH_STATEMENTS>> | undefined;
  const s = () => (prepared ??= prepareTable(c.db, SQLITE_BATCH_STATEMENTS));
  return {
    async record(submission) {
      c.guard(() => s().record.run(recordParams(submission)));
    },
    async update(nonce, change, at) {
      c.guard(() => s().update.run(updateParams(nonce, change, at)));
    },
    async list(runId) {
      return c.guard(() => s().list.all({ runId }).map(toSubmission));
    },
  };
}
