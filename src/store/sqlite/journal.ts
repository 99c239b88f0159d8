import type { Key } from "../../core/types.js";
import { checkStepDrafts, journalEntries, listParams, stepParams } from "../journal-rows.js";
import type {
  JournalEntry,
  JournalFilter,
  JournalStore,
  StepDiscard,
  StepDraft,
} from "../types.js";
import type { SqliteContext } from "./context.js";
import { immediate } from "./driver.js";
import type { JournalStatements } from "./statements.js";

/** The step journal (`JournalStore`) in SQLite. */
export function sqliteJournal(c: SqliteContext): JournalStore {
  return {
    async record(
      runId: string,
      token: string,
      drafts: StepDraft[],
      discard: readonly StepDiscard[] = [],
    ): Promise<void> {
      return c.guard(() => {
        checkStepDrafts(drafts);
        immediate(c.db, () => {
          c.fence(runId, token, [...drafts, ...discard]);
          writeSteps(c.journal, runId, drafts, discard);
        });
      });
    },
    async list(runId: string, filter: JournalFilter = {}): Promise<JournalEntry[]> {
      return c.guard(() => journalEntries(runId, c.journal.list.all(listParams(runId, filter))));
    },
    async keys(runId: string): Promise<Key[]> {
      return c.guard(() =>
        c.journal.openKeys.all({ runId }).map((r) => ({ sampleId: r.sample_id, epoch: r.epoch })),
      );
    },
    async prune(runId: string, keep: "open" | "failed" = "open"): Promise<number> {
      const statement = keep === "failed" ? c.journal.pruneScored : c.journal.prune;
      return c.guard(() => statement.run({ runId }).changes);
    },
  };
}

/** Journal entries and discards, inside the caller's transaction (see `JournalStore.record`). */
export function writeSteps(
  j: JournalStatements,
  runId: string,
  drafts: StepDraft[],
  discard: readonly StepDiscard[],
): void {
  for (const d of discard) {
    j.truncateOpen.run({ runId, sampleId: d.sampleId, epoch: d.epoch, step: d.fromStep });
  }
  for (const draft of drafts) {
    const params = stepParams(runId, draft);
    const key = { runId, sampleId: draft.sampleId, epoch: draft.epoch, step: draft.step };
    (draft.truncate ? j.truncateOpen : j.replaceOpen).run(key);
    j.insert.run(params);
  }
}
