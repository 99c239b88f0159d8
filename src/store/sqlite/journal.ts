import type { Key } from "../../core/types.js";
import { checkStepDrafts, listParams, stepParams, toJournalEntry } from "../journal-rows.js";
import type {
  JournalEntry,
  JournalFilter,
  JournalStore,
  StepDiscard,
  StepDraft,
} from "../types.js";
import type { CommitThread } from "./commit-thread.js";
import type { SqliteContext } from "./context.js";
import { immediate } from "./driver.js";
import { SQLITE_JOURNAL_STATEMENTS, SQLITE_STATEMENTS } from "./statements.js";
import type { JournalStatements } from "./statements.js";

/** What a commit thread runs for the journal (see CommitThread; `owner` is its fence). */
export const JOURNAL_THREAD_STATEMENTS = {
  owner: SQLITE_STATEMENTS.ownerToken.text,
  truncateOpen: SQLITE_JOURNAL_STATEMENTS.truncateOpen.text,
  replaceOpen: SQLITE_JOURNAL_STATEMENTS.replaceOpen.text,
  insert: SQLITE_JOURNAL_STATEMENTS.insert.text,
};

/**
 * The step journal (`JournalStore`) in SQLite. With a `thread` (a file store's: see
 * CommitThread), the run owner's entries commit there, so the fsync of each durable commit does
 * not hold up the evaluation's thread; any other token's (a leased worker's, a fenced owner's)
 * and every write when the thread is gone commit here, through the full fence.
 */
export function sqliteJournal(c: SqliteContext, thread?: () => CommitThread | null): JournalStore {
  /** Tokens the thread found not to own their run: their writes go the fenced way. */
  const notOwners = new Set<string>();
  return {
    async record(
      runId: string,
      token: string,
      drafts: StepDraft[],
      discard: readonly StepDiscard[] = [],
    ): Promise<void> {
      const commits = notOwners.has(token) ? null : thread?.();
      if (commits) {
        const ops = c.guard(() => {
          checkStepDrafts(drafts);
          return stepOps(runId, drafts, discard);
        });
        const answer = await commits.run(runId, token, ops).catch((error: unknown) =>
          c.guard(() => {
            throw error;
          }),
        );
        if (answer === "done") return;
        notOwners.add(token);
      }
      return c.guard(() => {
        checkStepDrafts(drafts);
        immediate(c.db, () => {
          c.fence(runId, token, [...drafts, ...discard]);
          writeSteps(c.journal, runId, drafts, discard);
        });
      });
    },
    async list(runId: string, filter: JournalFilter = {}): Promise<JournalEntry[]> {
      return c.guard(() =>
        c.journal.list.all(listParams(runId, filter)).map((row) => toJournalEntry(runId, row)),
      );
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
  for (const [name, params] of stepOps(runId, drafts, discard)) j[name].run(params);
}

/**
 * The statements that write journal entries and discards, in order: each discard's truncation,
 * then per entry the removal of what is open at its step (or from it on) and its insert. Run as
 * they are, twice over, they leave the same rows: a transaction whose outcome is unknown may be
 * run again.
 */
export function stepOps(
  runId: string,
  drafts: readonly StepDraft[],
  discard: readonly StepDiscard[],
): JournalOp[] {
  const ops: JournalOp[] = [];
  for (const d of discard) {
    ops.push(["truncateOpen", { runId, sampleId: d.sampleId, epoch: d.epoch, step: d.fromStep }]);
  }
  for (const draft of drafts) {
    const key = { runId, sampleId: draft.sampleId, epoch: draft.epoch, step: draft.step };
    ops.push([draft.truncate ? "truncateOpen" : "replaceOpen", key]);
    ops.push(["insert", stepParams(runId, draft)]);
  }
  return ops;
}

/** One journal write: the statement's name and its parameters. */
export type JournalOp = [
  name: "truncateOpen" | "replaceOpen" | "insert",
  params: Record<string, unknown>,
];
