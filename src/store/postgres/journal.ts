import type { Key } from "../../core/types.js";
import {
  checkStepDrafts,
  listParams,
  stepParams,
  journalEntries,
  type JournalRow,
} from "../journal-rows.js";
import type {
  JournalEntry,
  JournalFilter,
  JournalStore,
  StepDiscard,
  StepDraft,
} from "../types.js";
import type { PostgresContext } from "./context.js";
import { transaction, type Queryable } from "./driver.js";
import { postgresJournalStatements as journal } from "./statements.js";

/** The step journal (`JournalStore`) in PostgreSQL. */
export function postgresJournal(c: PostgresContext): JournalStore {
  return {
    async record(
      runId: string,
      token: string,
      drafts: StepDraft[],
      discard: readonly StepDiscard[] = [],
    ): Promise<void> {
      checkStepDrafts(drafts);
      return c.guard(() =>
        transaction(c.pool, async (tx) => {
          await c.fence(tx, runId, token, [...drafts, ...discard]);
          await writeSteps(tx, runId, drafts, discard);
        }),
      );
    },
    async list(runId: string, filter: JournalFilter = {}): Promise<JournalEntry[]> {
      return c.guard(async () => {
        const rows = await journal.list.rows<JournalRow>(c.pool, listParams(runId, filter));
        return journalEntries(runId, rows);
      });
    },
    async keys(runId: string): Promise<Key[]> {
      return c.guard(async () => {
        const rows = await journal.openKeys.rows<{ sample_id: string; epoch: number }>(c.pool, {
          runId,
        });
        return rows.map((r) => ({ sampleId: r.sample_id, epoch: r.epoch }));
      });
    },
    async prune(runId: string, keep: "open" | "failed" = "open"): Promise<number> {
      const statement = keep === "failed" ? journal.pruneScored : journal.prune;
      return c.guard(() => statement.run(c.pool, { runId }));
    },
  };
}

/** Journal entries and discards, inside the caller's transaction (see `JournalStore.record`). */
export async function writeSteps(
  tx: Queryable,
  runId: string,
  drafts: StepDraft[],
  discard: readonly StepDiscard[],
): Promise<void> {
  // One statement each for the whole batch: the open entries each draft replaces (or, for a
  // divergence or a discard, every one from its step on), then the new entries. Both are sent
  // before either answer is awaited (in a pipelined transaction, before its COMMIT).
  const dropped = [
    ...discard.map((d) => ({ ...d, step: d.fromStep, after: true })),
    ...drafts.map((d) => ({ ...d, after: d.truncate === true })),
  ];
  const sent: Promise<number>[] = [];
  if (dropped.length > 0) {
    sent.push(
      journal.dropOpen.run(tx, {
        runId,
        sampleIds: dropped.map((d) => d.sampleId),
        epochs: dropped.map((d) => d.epoch),
        steps: dropped.map((d) => d.step),
        after: dropped.map((d) => d.after),
      }),
    );
  }
  // A later draft at the same step replaces an earlier one, as SQLite's one by one does.
  const last = new Map(drafts.map((d) => [`${d.sampleId}\u0000${d.epoch}\u0000${d.step}`, d]));
  if (last.size > 0) {
    const rows = [...last.values()].map((d) => stepParams(runId, d));
    sent.push(journal.insertMany.run(tx, stepColumns(rows)));
  }
  await Promise.all(sent);
}

/** Rows of step parameters as one array per column (the run id once), for an `unnest` INSERT. */
function stepColumns(rows: ReturnType<typeof stepParams>[]): Record<string, unknown> {
  const columns: Record<string, unknown[]> = {};
  for (const row of rows) {
    for (const [name, value] of Object.entries(row)) (columns[name] ??= []).push(value);
  }
  return { ...columns, runId: rows[0]!.runId };
}
