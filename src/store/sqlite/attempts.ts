import type { Attempt, AttemptDraft, Scoring, ScoringDraft } from "../../core/types.js";
import { alreadyScored, checkDrafts, notInSnapshot } from "../checks.js";
import { checkStepDrafts } from "../journal-rows.js";
import { attemptValues } from "../attempt-values.js";
import { storedAttempt } from "../rows.js";
import {
  checkScoringDrafts,
  hasOutput,
  scoringParams,
  storedScoring,
  unscorable,
} from "../scoring-rows.js";
import type { AttemptBatchExtras, AttemptStore } from "../types.js";
import type { SqliteContext } from "./context.js";
import { figuresAfterAttempts, figuresAfterRescore, sampleFigures } from "./figures.js";
import type { SampleBefore } from "../figures-rows.js";
import { immediate } from "./driver.js";
import { writeSteps } from "./journal.js";

/** Attempt and scoring commits (`AttemptStore`) in SQLite, each batch one IMMEDIATE transaction. */
export function sqliteAttempts(c: SqliteContext): AttemptStore {
  return {
    async record(
      runId: string,
      token: string,
      drafts: AttemptDraft[],
      extras: AttemptBatchExtras = {},
    ): Promise<Attempt[]> {
      const { inflight = [], steps } = extras;
      return c.guard(() => {
        checkDrafts(drafts);
        if (steps) checkStepDrafts(steps.drafts);
        return immediate(c.db, () => {
          const stepKeys = steps ? [...steps.drafts, ...steps.discard] : [];
          const fence = c.fence(runId, token, [...drafts, ...inflight, ...stepKeys]);
          if (steps) writeSteps(c.journal, runId, steps.drafts, steps.discard);
          for (const key of inflight) {
            c.requireSample(runId, key.sampleId);
            c.s.markInflight.run(runId, key.sampleId, key.epoch);
          }
          const before = new Map<string, SampleBefore>();
          const left = leftOpen(c, runId);
          const stored = drafts.map((draft) => insertAttempt(c, runId, draft, before, left));
          figuresAfterAttempts(c, runId, stored, before, left.reruns);
          // A worker's scored key has its outcome: its lease ends with the commit that gave it.
          if (fence === "worker") {
            c.leases.finish(
              runId,
              token,
              stored.filter((a) => a.status === "scored"),
            );
          }
          return stored;
        });
      });
    },
    async recordScorings(runId: string, token: string, drafts: ScoringDraft[]): Promise<Scoring[]> {
      return c.guard(() => {
        checkScoringDrafts(drafts);
        return immediate(c.db, () => {
          c.fence(runId, token, drafts);
          const stored = drafts.map((draft) => {
            const { sampleId, epoch, attempt } = draft;
            const target = c.s.scorableAttempt.get({ runId, sampleId, epoch, attempt });
            if (!target) throw unscorable(runId, draft, "is not stored");
            if (!hasOutput(target)) throw unscorable(runId, draft, "has no output to score");
            c.s.insertScoring.run(scoringParams(runId, target.next, draft));
            return storedScoring(runId, target.next, draft);
          });
          figuresAfterRescore(
            c,
            runId,
            drafts.map((d) => d.sampleId),
            drafts,
          );
          return stored;
        });
      });
    },
  };
}

/**
 * What an attempt's commit may have to close or move: the run's in-flight marks, its open steps,
 * its open re-run requests' counts (`store/rerun-facts.ts`).
 */
interface LeftOpen {
  inflight: boolean;
  steps: boolean;
  reruns: boolean;
}

/**
 * Whether the run has any in-flight mark, open journal entry or open re-run request, read once
 * per batch inside its IMMEDIATE transaction (nothing can add one before the commit): when it has
 * none, an attempt's clearing and binding statements, which would change no row, are not run, nor
 * are the requests' facts computed again.
 */
function leftOpen(c: SqliteContext, runId: string): LeftOpen {
  const [inflight, steps, reruns] = c.s.leftOpen.get(runId, runId, runId)!;
  return { inflight: inflight === 1, steps: steps === 1, reruns: reruns === 1 };
}

/** Runs inside the caller's IMMEDIATE transaction, so the checks hold until commit. */
function insertAttempt(
  c: SqliteContext,
  runId: string,
  draft: AttemptDraft,
  /** Filled with each sample's fingerprint and figures as the batch found them. */
  before: Map<string, SampleBefore>,
  left: LeftOpen,
): Attempt {
  const { sampleId, epoch, fingerprint } = draft;
  const after = draft.rerunAfter ?? 0;
  const state = c.s.keyState.get(runId, sampleId, epoch, fingerprint, after);
  if (state?.current == null) throw notInSnapshot(runId, sampleId);
  if (!before.has(sampleId)) {
    before.set(sampleId, { fingerprint: state.current, figures: sampleFigures(state.figures) });
  }
  if (state.scored) throw alreadyScored(runId, sampleId, epoch);
  c.s.insertAttempt.run(...attemptValues(runId, state.next, draft));
  if (left.inflight) c.s.clearInflight.run(runId, sampleId, epoch);
  if (left.steps) c.journal.bind.run({ runId, sampleId, epoch, attempt: state.next });
  return storedAttempt(runId, state.next, draft);
}
