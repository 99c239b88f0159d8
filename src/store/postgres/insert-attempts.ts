import { keyString } from "../../core/keys.js";
import type { Attempt, AttemptDraft } from "../../core/types.js";
import { alreadyScored, notInSnapshot } from "../checks.js";
import type { Queryable } from "./driver.js";
import { postgresStatements as sql } from "./statements.js";
import { ATTEMPT_INSERT_COLUMNS, attemptValues } from "../attempt-values.js";
import { storedAttempt } from "../rows.js";

/** What numbering a draft needs to know of its key (`keyStates`), one row per draft. */
export interface KeyState {
  inSnapshot: boolean;
  scored: boolean;
  next: number;
}

/**
 * Numbers and inserts a batch in two statements whatever its size (and `numberAttempts`). Runs inside the caller's
 * transaction after `fence`: the run's row lock keeps the states it read true until commit.
 */
export async function insertAttempts(
  tx: Queryable,
  runId: string,
  drafts: AttemptDraft[],
): Promise<Attempt[]> {
  if (drafts.length === 0) return [];
  const stored = numberAttempts(runId, drafts, await readKeyStates(tx, runId, drafts));
  await insertNumbered(tx, runId, drafts, stored);
  return stored;
}

/** The stored state of each draft's key, in the drafts' order (none for no drafts). */
export async function readKeyStates(
  tx: Queryable,
  runId: string,
  drafts: readonly AttemptDraft[],
): Promise<KeyState[]> {
  if (drafts.length === 0) return [];
  return sql.keyStates.rows<KeyState & Record<string, unknown>>(tx, {
    runId,
    sampleIds: drafts.map((d) => d.sampleId),
    epochs: drafts.map((d) => d.epoch),
    fingerprints: drafts.map((d) => d.fingerprint),
    afters: drafts.map((d) => d.rerunAfter ?? 0),
  });
}

/**
 * The attempts as they will be stored, numbered from their keys' states. Within the batch, a
 * key's later drafts number on from its earlier ones, and a second scored attempt for a key and
 * fingerprint is refused like one already stored. A re-run draft (`rerunAfter`) is refused only
 * by a scored attempt numbered after the one it follows.
 */
export function numberAttempts(
  runId: string,
  drafts: readonly AttemptDraft[],
  states: readonly KeyState[],
): Attempt[] {
  const next = new Map<string, number>();
  const scored = new Set<string>();
  return drafts.map((draft, i) => {
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
}

/** One INSERT of the numbered attempts (their keys' in-flight marks cleared with it). */
export async function insertNumbered(
  tx: Queryable,
  runId: string,
  drafts: readonly AttemptDraft[],
  stored: readonly Attempt[],
): Promise<void> {
  if (stored.length === 0) return;
  await sql.insertAttempts.run(tx, {
    ...attemptColumns(stored.map((a, i) => attemptValues(runId, a.attempt, drafts[i]!))),
    runId,
  });
}

/**
 * Rows of values turned into one array per column, for an `unnest` INSERT, each named as the
 * statement names it: the column in camel case (`input_tokens`: `inputTokens`).
 */
function attemptColumns(rows: unknown[][]): Record<string, unknown[]> {
  const columns: Record<string, unknown[]> = {};
  ATTEMPT_INSERT_COLUMNS.forEach((column, i) => {
    const name = column.replace(/_([a-z])/g, (_, c: string) => c.toUpperCase());
    columns[name] = rows.map((row) => row[i]);
  });
  return columns;
}
