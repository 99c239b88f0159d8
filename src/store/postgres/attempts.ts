import type { Attempt, AttemptDraft, Key, Scoring, ScoringDraft } from "../../core/types.js";
import { checkDrafts } from "../checks.js";
import { checkStepDrafts } from "../journal-rows.js";
import {
  checkScoringDrafts,
  hasOutput,
  scoringParams,
  storedScoring,
  unscorable,
} from "../scoring-rows.js";
import type { AttemptBatchExtras, AttemptStore } from "../types.js";
import type { PostgresContext } from "./context.js";
import { transaction, type Queryable } from "./driver.js";
import { figuresAfterAttempts, figuresAfterRescore } from "./figures.js";
import { insertAttempts } from "./insert-attempts.js";
import { writeSteps } from "./journal.js";
import { postgresLeases as leases } from "./lease-queries.js";
import { postgresJournalStatements as journal, postgresStatements as sql } from "./statements.js";

/** Attempt and scoring commits (`AttemptStore`) in PostgreSQL, each batch one transaction. */
export function postgresAttempts(c: PostgresContext): AttemptStore {
  return {
    async record(
      runId: string,
      token: string,
      drafts: AttemptDraft[],
      extras: AttemptBatchExtras = {},
    ): Promise<Attempt[]> {
      const { inflight = [], steps } = extras;
      checkDrafts(drafts);
      if (steps) checkStepDrafts(steps.drafts);
      const keys = [...drafts, ...inflight, ...(steps ? [...steps.drafts, ...steps.discard] : [])];
      return c.guard(() =>
        transaction(c.pool, async (tx) => {
          if (await c.fenceWorker(tx, runId, token, keys)) {
            if (steps) await writeSteps(tx, runId, steps.drafts, steps.discard);
            return recordWorkerAttempts(c, tx, runId, token, drafts, inflight);
          }
          const fence = await c.fence(tx, runId, token, keys);
          if (steps) await writeSteps(tx, runId, steps.drafts, steps.discard);
          await c.mark(tx, runId, inflight);
          const stored = await insertAttempts(tx, runId, drafts);
          if (stored.length > 0) await journal.bind.run(tx, bindColumns(runId, stored));
          await figuresAfterAttempts(c.lastFigures, tx, runId, stored);
          // A worker's scored key has its outcome: its lease ends with the commit that gave it.
          if (fence === "worker") {
            await leases.finish(
              tx,
              runId,
              token,
              stored.filter((a) => a.status === "scored"),
            );
          }
          return stored;
        }),
      );
    },
    async recordScorings(runId: string, token: string, drafts: ScoringDraft[]): Promise<Scoring[]> {
      checkScoringDrafts(drafts);
      return c.guard(() =>
        transaction(c.pool, async (tx) => {
          await c.fence(tx, runId, token, drafts);
          const stored: Scoring[] = [];
          for (const draft of drafts) {
            const { sampleId, epoch, attempt } = draft;
            const [target] = await sql.scorableAttempt.rows<{
              status: string;
              error: string | null;
              next: number;
            }>(tx, { runId, sampleId, epoch, attempt });
            if (!target) throw unscorable(runId, draft, "is not stored");
            if (!hasOutput(target)) throw unscorable(runId, draft, "has no output to score");
            await sql.insertScoring.run(tx, scoringParams(runId, target.next, draft));
            stored.push(storedScoring(runId, target.next, draft));
          }
          await figuresAfterRescore(
            c.lastFigures,
            tx,
            runId,
            drafts.map((d) => d.sampleId),
            drafts,
          );
          return stored;
        }),
      );
    },
  };
}

/**
 * A worker's commit (see `fenceWorker`). Everything about its keys is done under their lease
 * rows' locks; the run's row lock, which puts the run's attempts in commit order (the feed's
 * `seq`), is taken last, right before the INSERT, so workers' commits queue on it for two
 * statements (the INSERT and COMMIT) and not for the whole transaction.
 */
async function recordWorkerAttempts(
  c: PostgresContext,
  tx: Queryable,
  runId: string,
  token: string,
  drafts: AttemptDraft[],
  inflight: readonly Key[],
): Promise<Attempt[]> {
  await c.mark(tx, runId, inflight);
  const stored = await insertAttempts(tx, runId, drafts, async (stored) => {
    if (stored.length > 0) await journal.bind.run(tx, bindColumns(runId, stored));
    // A scored key has its outcome: its lease ends with the commit that gives it.
    await leases.finish(
      tx,
      runId,
      token,
      stored.filter((a) => a.status === "scored"),
    );
    await sql.lockOwner.run(tx, { runId });
  });
  // Under the run's row lock, taken last: the figures are the run's, shared by every worker.
  await figuresAfterAttempts(c.lastFigures, tx, runId, stored);
  return stored;
}

function bindColumns(runId: string, stored: readonly Attempt[]) {
  // A batch may hold two attempts of one key (an error, then its retry): the first binds.
  return {
    runId,
    sampleIds: stored.map((a) => a.sampleId),
    epochs: stored.map((a) => a.epoch),
    attempts: stored.map((a) => a.attempt),
  };
}
