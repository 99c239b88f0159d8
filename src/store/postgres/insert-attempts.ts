import { keyString } from "../../core/keys.js";
import type { Attempt, AttemptDraft } from "../../core/types.js";
import { alreadyScored, notInSnapshot } from "../checks.js";
import type { Queryable } from "./driver.js";
import { postgresStatements as sql } from "./statements.js";
import { attemptParams, storedAttempt } from "../rows.js";

/**
 * Numbers and inserts a batch in three round trips whatever its size. Runs inside the caller's
 * transaction after `fence`: the run's row lock keeps the states it read true until commit.
 * Within the batch, a key's later drafts number on from its earlier ones, and a second scored
 * attempt for a key and fingerprint is refused like one already stored. A re-run draft
 * (`rerunAfter`) is refused only by a scored attempt numbered after the one it follows.
 */
export async function insertAttempts(
  tx: Queryable,
  runId: string,
  drafts: AttemptDraft[],
  /** Work of the caller's with the attempts as they will be stored, right before the INSERT. */
  beforeInsert?: (stored: Attempt[]) => Promise<void>,
): Promise<Attempt[]> {
  if (drafts.length === 0) return [];
  const states = await sql.keyStates.rows<{ inSnapshot: boolean; scored: boolean; next: number }>(
    tx,
    {
      runId,
      sampleIds: drafts.map((d) => d.sampleId),
      epochs: drafts.map((d) => d.epoch),
      fingerprints: drafts.map((d) => d.fingerprint),
      afters: drafts.map((d) => d.rerunAfter ?? 0),
    },
  );
  const next = new Map<string, number>();
  const scored = new Set<string>();
  const stored = drafts.map((draft, i) => {
    const state = states[i]!;
    const { sampleId, epoch } = draft;
    if (!state.inSnapshot) throw notInSnapshot(runId, sampleId);
    const key = keyString(draft);
    const scoredKey = `${key}\u0000${draft.fingerprint}`;
    if (state.scored || scored.has(scoredKey)) throw alreadyScored(runId, sampleId, epoch);
    if (draft.status === "scored") scored.add(scoredKey);
    const attempt = next.get(key) ?? state.next;
    next.set(key, attempt + 1);
    return storedAttempt(runId, attempt, draft);
  });
  await beforeInsert?.(stored);
  await sql.insertAttempts.run(tx, {
    ...attemptColumns(stored.map((a, i) => attemptParams(runId, a.attempt, drafts[i]!))),
    runId,
  });
  return stored;
}

/** Rows of named parameters turned into one array per name, for an `unnest` INSERT. */
function attemptColumns(rows: ReturnType<typeof attemptParams>[]): Record<string, unknown[]> {
  const columns: Record<string, unknown[]> = {};
  for (const row of rows) {
    for (const [name, value] of Object.entries(row)) (columns[name] ??= []).push(value);
  }
  return columns;
}
