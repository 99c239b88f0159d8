import * as z from "zod";
import { StetError } from "../core/errors.js";
import { conversationOf, withConversation } from "../core/chat-conversation.js";
import { isJson, jsonSchema, type Json } from "../core/json.js";
import { checkUsage, redactedSchema } from "../core/schemas.js";
import { invalidInput } from "./checks.js";
import { keyRangeParams, parseColumn, toUsage, usageDetailText } from "./rows.js";
import type { JournalEntry, JournalFilter, StepDraft } from "./types.js";

/**
 * Step-journal rows (`journal` table, migration 5) as both adapters write and read them, and
 * the SQL they share: both compile `@name` parameters, so the statements are written once.
 */

export const JOURNAL_COLUMNS = `sample_id, epoch, attempt, step, name, kind, input_hash, input,
  result, error, input_tokens, output_tokens, cost_usd, recorded_at, duration_ms, redacted,
  usage_detail, prefix_step, prefix_count`;

export interface JournalRow {
  sample_id: string;
  epoch: number;
  attempt: number | null;
  step: number;
  name: string;
  kind: string;
  input_hash: string;
  input: string;
  result: string | null;
  error: string | null;
  input_tokens: number | null;
  output_tokens: number | null;
  cost_usd: number | null;
  recorded_at: string;
  duration_ms: number;
  redacted: string | null;
  usage_detail: string | null;
  /** `StepDraft.inputPrefix` (migration 18 in SQLite, 17 in PostgreSQL): null for a whole input. */
  prefix_step: number | null;
  prefix_count: number | null;
}

/**
 * A journal row of its key's latest attempt when that attempt is an error: a resume executes the
 * key again and its new attempt replays this journal, so no retention drops it.
 */
const PENDING_RETRY = `EXISTS (SELECT 1 FROM attempts_now a WHERE a.run_id = journal.run_id
      AND a.sample_id = journal.sample_id AND a.epoch = journal.epoch
      AND a.attempt = journal.attempt AND a.status = 'error'
      AND a.attempt = (SELECT MAX(b.attempt) FROM attempts b WHERE b.run_id = a.run_id
        AND b.sample_id = a.sample_id AND b.epoch = a.epoch))`;

export const JOURNAL_SQL = {
  /** Divergence: the open entries from a step on go before the new one is written. */
  truncateOpen: `DELETE FROM journal WHERE run_id = @runId AND sample_id = @sampleId
    AND epoch = @epoch AND attempt IS NULL AND step >= @step`,
  /** An open entry at the same step is replaced (kept from an earlier call to the same index). */
  replaceOpen: `DELETE FROM journal WHERE run_id = @runId AND sample_id = @sampleId
    AND epoch = @epoch AND attempt IS NULL AND step = @step`,
  insert: `INSERT INTO journal (run_id, attempt, ${JOURNAL_COLUMNS.replace("attempt, ", "")})
    VALUES (@runId, NULL, @sampleId, @epoch, @step, @name, @kind, @inputHash, @input, @result,
      @error, @inputTokens, @outputTokens, @costUsd, @recordedAt, @durationMs, @redacted,
      @usageDetail, @prefixStep, @prefixCount)`,
  /** What recordAttempts runs per stored attempt: the key's open entries become its trajectory. */
  bind: `UPDATE journal SET attempt = @attempt WHERE run_id = @runId AND sample_id = @sampleId
    AND epoch = @epoch AND attempt IS NULL`,
  /** SQLite's; PostgreSQL's types its parameters (`listJournalPostgres`). */
  list: `SELECT ${JOURNAL_COLUMNS} FROM journal WHERE run_id = @runId
    AND (@sampleId IS NULL OR sample_id = @sampleId) AND (@epoch IS NULL OR epoch = @epoch)
    AND (@fromSampleId IS NULL OR sample_id >= @fromSampleId)
    AND (@toSampleId IS NULL OR sample_id <= @toSampleId)
    AND (@open = 0 OR attempt IS NULL) AND (@attempt IS NULL OR attempt = @attempt)
    ORDER BY sample_id, epoch, attempt IS NULL, attempt, step`,
  listPostgres: `SELECT ${JOURNAL_COLUMNS} FROM journal WHERE run_id = @runId
    AND (@sampleId::text IS NULL OR sample_id = @sampleId::text)
    AND (@epoch::int IS NULL OR epoch = @epoch::int)
    AND (@fromSampleId::text IS NULL OR sample_id >= @fromSampleId::text)
    AND (@toSampleId::text IS NULL OR sample_id <= @toSampleId::text)
    AND (@open::int = 0 OR attempt IS NULL) AND (@attempt::int IS NULL OR attempt = @attempt::int)
    ORDER BY sample_id, epoch, attempt IS NULL, attempt, step`,
  openKeys: `SELECT DISTINCT sample_id, epoch FROM journal WHERE run_id = @runId
    AND attempt IS NULL ORDER BY sample_id, epoch`,
  /** Committed attempts' journals go, but a pending retry's (see PENDING_RETRY). */
  prune: `DELETE FROM journal WHERE run_id = @runId AND attempt IS NOT NULL
    AND NOT ${PENDING_RETRY}`,
  /** Retention "failed": only the journals of attempts that were scored go. */
  pruneScored: `DELETE FROM journal WHERE run_id = @runId AND attempt IS NOT NULL
    AND EXISTS (SELECT 1 FROM attempts a WHERE a.run_id = journal.run_id
      AND a.sample_id = journal.sample_id AND a.epoch = journal.epoch
      AND a.attempt = journal.attempt AND a.status = 'scored')`,
};

const stepErrorSchema = z.object({
  message: z.string(),
  type: z.string().optional(),
  status: z.number().optional(),
});

/** Refuses a malformed draft (E_INVALID_INPUT) before anything is written. */
export function checkStepDrafts(drafts: readonly StepDraft[]): void {
  for (const d of drafts) {
    const what = `journal step ${d.step} of sample "${d.sampleId}" epoch ${d.epoch}`;
    if (!Number.isInteger(d.step) || d.step < 0) throw invalidInput(`${what}: bad step index`);
    if (d.kind !== "step" && d.kind !== "chat") throw invalidInput(`${what}: bad kind ${d.kind}`);
    if (!d.name) throw invalidInput(`${what}: a step needs a name`);
    if (!/^[0-9a-f]{64}$/.test(d.inputHash)) throw invalidInput(`${what}: bad input hash`);
    const checks = [
      // Checked without zod first (every entry is checked here); zod words a problem.
      ["input", isJson(d.input) ? undefined : jsonSchema.safeParse(d.input)],
      ["result", isJson(d.result) ? undefined : jsonSchema.safeParse(d.result)],
      ["usage", d.usage === null ? undefined : checkUsage(d.usage)],
      ["error", d.error === null ? undefined : stepErrorSchema.safeParse(d.error)],
    ] as const;
    for (const [field, result] of checks) {
      if (result && !result.success) {
        throw invalidInput(`${what}: ${field}: ${z.prettifyError(result.error)}`);
      }
    }
    if (d.inputPrefix) checkPrefix(d, d.inputPrefix, what);
  }
}

function checkPrefix(d: StepDraft, prefix: { step: number; count: number }, what: string): void {
  const { step, count } = prefix;
  const conversation = conversationOf(d.input);
  if (d.kind !== "chat" || conversation === undefined) {
    throw invalidInput(`${what}: an input prefix needs a chat step's conversation`);
  }
  if (!Number.isInteger(step) || step < 0 || step >= d.step) {
    throw invalidInput(`${what}: its input prefix names step ${step}, not an earlier one`);
  }
  if (!Number.isInteger(count) || count < 1 || count > conversation.length) {
    throw invalidInput(`${what}: its input prefix of ${count} messages is not within its own`);
  }
}

export function stepParams(runId: string, d: StepDraft) {
  return {
    runId,
    sampleId: d.sampleId,
    epoch: d.epoch,
    step: d.step,
    name: d.name,
    kind: d.kind,
    inputHash: d.inputHash,
    input: JSON.stringify(storedInput(d)),
    result: d.error === null ? JSON.stringify(d.result) : null,
    error: d.error === null ? null : JSON.stringify(d.error),
    inputTokens: d.usage?.inputTokens ?? null,
    outputTokens: d.usage?.outputTokens ?? null,
    costUsd: d.usage?.costUsd ?? null,
    recordedAt: d.recordedAt,
    durationMs: d.durationMs,
    redacted: d.redacted === undefined ? null : JSON.stringify(d.redacted),
    usageDetail: usageDetailText(d.usage),
    prefixStep: d.inputPrefix?.step ?? null,
    prefixCount: d.inputPrefix?.count ?? null,
  };
}

/** The input as stored: with an `inputPrefix`, its conversation without the prefix's messages. */
function storedInput(d: StepDraft): Json {
  if (!d.inputPrefix) return d.input;
  return withConversation(d.input, conversationOf(d.input)!.slice(d.inputPrefix.count));
}

export function listParams(runId: string, filter: JournalFilter) {
  return {
    runId,
    ...keyRangeParams(filter),
    open: filter.attempt === "open" ? 1 : 0,
    attempt: typeof filter.attempt === "number" ? filter.attempt : null,
  };
}

/**
 * A list's rows as entries, in their order (key, then attempt, then step), each chat step's
 * conversation put back together from its prefix (`StepDraft.inputPrefix`): the prefix's step is
 * an earlier entry of the same key and execution, which a list always holds with it (it reads
 * whole keys). A prefix whose step is not there is a corrupt journal (E_STORE).
 */
export function journalEntries(runId: string, rows: readonly JournalRow[]): JournalEntry[] {
  let group = "";
  let conversations = new Map<number, readonly Json[]>();
  return rows.map((row) => {
    const entry = toJournalEntry(runId, row);
    const at = `${row.sample_id}\u0000${row.epoch}\u0000${row.attempt ?? "open"}`;
    if (at !== group) [group, conversations] = [at, new Map()];
    if (row.prefix_step !== null) {
      const earlier = conversations.get(row.prefix_step);
      const tail = conversationOf(entry.input);
      const count = row.prefix_count ?? 0;
      if (!earlier || !tail || earlier.length < count) {
        const what = `journal step ${row.step} of ${runId}/${row.sample_id}#${row.epoch}`;
        throw new StetError(
          "E_STORE",
          `corrupt ${what}: its input continues step ${row.prefix_step}'s conversation (${count} messages), which the journal does not hold`,
        );
      }
      entry.input = withConversation(entry.input, [...earlier.slice(0, count), ...tail]);
    }
    const conversation = entry.kind === "chat" ? conversationOf(entry.input) : undefined;
    if (conversation) conversations.set(row.step, conversation);
    return entry;
  });
}

export function toJournalEntry(runId: string, row: JournalRow): JournalEntry {
  const what = (column: string) =>
    `${column} of journal step ${row.step} of ${runId}/${row.sample_id}#${row.epoch}`;
  if (row.kind !== "step" && row.kind !== "chat") {
    throw new StetError("E_STORE", `corrupt ${what("kind")}: ${row.kind}`);
  }
  const entry: JournalEntry = {
    runId,
    sampleId: row.sample_id,
    epoch: row.epoch,
    attempt: row.attempt,
    step: row.step,
    name: row.name,
    kind: row.kind,
    inputHash: row.input_hash,
    input: parseColumn(jsonSchema, row.input, what("input")),
    result: row.result === null ? null : parseColumn(jsonSchema, row.result, what("result")),
    error: row.error === null ? null : parseColumn(stepErrorSchema, row.error, what("error")),
    usage: toUsage(row.input_tokens, row.output_tokens, row.cost_usd, row.usage_detail, () =>
      what("usage_detail"),
    ),
    recordedAt: row.recorded_at,
    durationMs: row.duration_ms,
  };
  if (row.redacted !== null) {
    entry.redacted = parseColumn(redactedSchema, row.redacted, what("redacted"));
  }
  return entry;
}
