import type { Attempt, AttemptDraft, Key, Scoring, ScoringDraft } from "../../core/types.js";
import { checkDrafts, fenced, notInSnapshot, runNotFound } from "../checks.js";
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
import { pipelinedTransaction, transaction, type PipelinedTx, type Queryable } from "./driver.js";
import {
  figuresAfterAttempts,
  figuresAfterRescore,
  readFiguresBefore,
  writeFiguresAfter,
} from "./figures.js";
import {
  insertAttempts,
  insertNumbered,
  numberAttempts,
  readKeyStates,
} from "./insert-attempts.js";
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
      const stored = await recordBatch(c, runId, token, drafts, inflight, steps);
      await c.plannerStats.grew(c.pool, runId, stored.length);
      return stored;
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
 * The commit of a run that is not distributed, by its owner, in two round trips: BEGIN, the
 * fence (the run's row locked) and the reads go out together; once the fence has answered that
 * `token` owns the run, the writes go out with COMMIT. The reads run after the lock, as in
 * `record`'s other path. Undefined, nothing written, when `token` is not the run's owner: that
 * path, which knows workers' leases and says what is missing, then answers.
 */
async function recordOwned(
  c: PostgresContext,
  tx: PipelinedTx,
  { runId, token, drafts, inflight, steps }: Batch,
): Promise<Attempt[] | undefined> {
  const [[owner], states, before, [missing]] = await Promise.all([
    sql.lockOwner.rows<{ owner_token: string | null }>(tx, { runId }),
    readKeyStates(tx, runId, drafts),
    readFiguresBefore(tx, runId, drafts),
    missingSamples(tx, runId, inflight),
  ]);
  if (owner?.owner_token !== token) return undefined;
  // Refused here, before any write: the writes' own checks answer after COMMIT has gone out, so
  // only a statement failing in the server (which turns COMMIT into ROLLBACK) may be left to them.
  if (missing) throw notInSnapshot(runId, missing.sampleId);
  const stored = drafts.length === 0 ? [] : numberAttempts(runId, drafts, states);
  if (steps) tx.defer(writeSteps(tx, runId, steps.drafts, steps.discard));
  tx.defer(c.mark(tx, runId, inflight));
  tx.defer(insertNumbered(tx, runId, drafts, stored));
  if (stored.length > 0) tx.defer(journal.bind.run(tx, bindColumns(runId, stored)));
  tx.defer(writeFiguresAfter(c.lastFigures, tx, runId, before, stored));
  return stored;
}

/** A batch to commit, and every key it writes (`keys`: its attempts', marks' and steps'). */
interface Batch {
  runId: string;
  token: string;
  drafts: AttemptDraft[];
  inflight: readonly Key[];
  steps: AttemptBatchExtras["steps"];
  keys: readonly Key[];
}

/**
 * A worker's commit in three round trips: BEGIN goes out with the worker's fence (its keys'
 * lease rows locked) and the reads; once they answered, the writes with the run's row lock
 * (taken last, right before the INSERT: it puts the run's attempts in commit order, the feed's
 * `seq`, so workers' commits queue on it for the INSERT and the figures, not for the whole
 * transaction) and the read of its figures; then the figures' write with COMMIT. The locks are
 * taken in one order: lease rows, the worker's row (`finish`), the run's row last (what a
 * settle's fence relies on, see `leases.ts`). Undefined, nothing written, when the run is not
 * distributed or `token` is its owner's (the fenced path answers then); either way the store
 * learns whether the run is distributed.
 */
async function recordLeased(
  c: PostgresContext,
  tx: PipelinedTx,
  { runId, token, drafts, inflight, steps, keys }: Batch,
): Promise<Attempt[] | undefined> {
  const [[run], leased, states, [missing]] = await Promise.all([
    sql.readOwner.rows<{ owner_token: string | null; distributed: boolean }>(tx, { runId }),
    leases.fence(tx, runId, token, keys),
    readKeyStates(tx, runId, drafts),
    missingSamples(tx, runId, inflight),
  ]);
  if (!run) throw runNotFound(runId);
  c.learnDistributed(runId, run.distributed);
  if (!run.distributed || run.owner_token === token) return undefined;
  if (!leased) throw fenced(runId);
  if (missing) throw notInSnapshot(runId, missing.sampleId);
  const stored = drafts.length === 0 ? [] : numberAttempts(runId, drafts, states);
  if (steps) tx.defer(writeSteps(tx, runId, steps.drafts, steps.discard));
  tx.defer(c.mark(tx, runId, inflight));
  if (stored.length > 0) tx.defer(journal.bind.run(tx, bindColumns(runId, stored)));
  // A scored key has its outcome: its lease ends with the commit that gives it.
  const scored = stored.filter((a) => a.status === "scored");
  tx.defer(leases.finish(tx, runId, token, scored));
  tx.defer(sql.lockOwner.run(tx, { runId }));
  tx.defer(insertNumbered(tx, runId, drafts, stored));
  // Under the run's row lock: the figures are the run's, shared by every worker.
  const before = await readFiguresBefore(tx, runId, stored);
  tx.defer(writeFiguresAfter(c.lastFigures, tx, runId, before, stored));
  return stored;
}

/**
 * One batch's transaction: pipelined (an owned run's by its owner, `recordOwned`; any other's
 * first as a worker's, `recordLeased`), else a fenced one, a round trip a statement (the run's
 * owner before this process knew the run owned, a distributed run's owner, a token that owns
 * nothing: the path that says what is wrong).
 */
async function recordBatch(
  c: PostgresContext,
  runId: string,
  token: string,
  drafts: AttemptDraft[],
  inflight: readonly Key[],
  steps: AttemptBatchExtras["steps"],
): Promise<Attempt[]> {
  const keys = [...drafts, ...inflight, ...(steps ? [...steps.drafts, ...steps.discard] : [])];
  const record = c.ownedRun(runId) ? recordOwned : recordLeased;
  const done = await c.guard(() =>
    pipelinedTransaction(c.pool, (tx) =>
      record(c, tx, { runId, token, drafts, inflight, steps, keys }),
    ),
  );
  if (done) return done;
  return c.guard(() =>
    transaction(c.pool, async (tx) => {
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
}

/** The first in-flight key whose sample the snapshot lacks (a read, sent with the fence's). */
function missingSamples(tx: Queryable, runId: string, inflight: readonly Key[]) {
  if (inflight.length === 0) return Promise.resolve([]);
  const sampleIds = inflight.map((k) => k.sampleId);
  return sql.missingSample.rows<{ sampleId: string }>(tx, { runId, sampleIds });
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
