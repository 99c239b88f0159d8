import * as z from "zod";
import { StetError } from "../core/errors.js";
import type { Json } from "../core/json.js";
import {
  redactedSchema,
  attemptErrorSchema,
  usageDetailSchema,
  sampleSchema,
} from "../core/schemas.js";
import type {
  Attempt,
  AttemptDraft,
  AttemptError,
  AttemptStatus,
  OwnerIdentity,
  Provenance,
  Run,
  SampleRecord,
  Score,
  Usage,
} from "../core/types.js";
import { USAGE_TIERS } from "../core/usage.js";
import { attemptLimitSchema } from "../core/limits.js";
import { scoresSchema } from "./checks.js";
import type {
  AttemptFact,
  AttemptFeed,
  AttemptHead,
  OutcomeEntry,
  OutcomeFilter,
  RunCounts,
} from "./types.js";

/** Rows as both adapters select them (the same columns); mapped to domain objects here only. */
export interface SampleRow {
  sample: string;
  fingerprint: string;
}

/**
 * Attempt rows are read in raw mode (arrays, not objects): for a 100,000-attempt listing the
 * driver builds rows noticeably faster. The tuple's order is ATTEMPT_HEAD_COLUMNS' order.
 */
export type AttemptHeadRow = [
  sampleId: string,
  epoch: number,
  attempt: number,
  status: string,
  fingerprint: string,
  scores: string,
  inputTokens: number | null,
  outputTokens: number | null,
  costUsd: number | null,
  error: string | null,
  startedAt: string,
  completedAt: string,
  durationMs: number,
  provenanceKind: string,
  provenanceSource: string | null,
  redacted: string | null,
  retries: number | null,
  usageDetail: string | null,
  limitHit: string | null,
];

export const ATTEMPT_HEAD_COLUMNS = `sample_id, epoch, attempt, status, fingerprint, scores,
  input_tokens, output_tokens, cost_usd, error, started_at, completed_at, duration_ms,
  provenance_kind, provenance_source, redacted, retries, usage_detail, limit_hit`;

export type AttemptRow = [...AttemptHeadRow, output: string, transcript: string | null];

export const ATTEMPT_COLUMNS = `${ATTEMPT_HEAD_COLUMNS}, output, transcript`;

/** Parses a JSON column with its schema; a value that does not fit is a corrupt store, named. */
export function parseColumn<T>(schema: z.ZodType<T>, text: string, what: string): T {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (cause) {
    throw new StetError("E_STORE", `corrupt ${what}: not JSON`, { cause });
  }
  const parsed = schema.safeParse(value);
  if (!parsed.success) {
    throw new StetError("E_STORE", `corrupt ${what}: ${z.prettifyError(parsed.error)}`);
  }
  return parsed.data;
}

/**
 * Parses a JSON column that may hold any JSON value (an output, a transcript): what `JSON.parse`
 * returns is JSON by construction, so no schema walks it again. `what` names the column, built
 * only when the text is not JSON.
 */
export function parseJsonColumn(text: string, what: () => string): Json {
  try {
    return JSON.parse(text) as Json;
  } catch (cause) {
    throw new StetError("E_STORE", `corrupt ${what()}: not JSON`, { cause });
  }
}

export function toSampleRecord(row: SampleRow, runId: string): SampleRecord {
  return {
    sample: parseColumn(sampleSchema, row.sample, `sample snapshot of run ${runId}`),
    fingerprint: row.fingerprint,
  };
}

/** How many distinct scores (and error) texts an attempt mapper keeps parsed. */
const PARSED_CACHE_MAX = 4_096;

/**
 * Maps attempt rows of one run. Listings repeat the same scores text many times (every exact
 * match scores `[{"scorer":"exact","value":1}]`), so each distinct text is parsed once and
 * the parsed value, deep-frozen, is shared by the attempts that stored it (up to
 * `PARSED_CACHE_MAX` texts at a time).
 */
export function attemptMapper(runId: string) {
  const scoresCache = new Map<string, Score[]>();
  const errorCache = new Map<string, AttemptError>();

  function cached<T>(
    cache: Map<string, T>,
    schema: z.ZodType<T>,
    text: string,
    row: AnyAttemptRow,
    column: string,
  ): T {
    let value = cache.get(text);
    if (value === undefined) {
      value = deepFreeze(parseColumn(schema, text, where(runId, row, column)));
      // Texts that differ row by row (a scorer's answer) would fill it with the whole run: a
      // paged read's memory stays bounded by starting again when it is full.
      if (cache.size >= PARSED_CACHE_MAX) cache.clear();
      cache.set(text, value);
    }
    return value;
  }

  const head = (row: AnyAttemptRow): AttemptHead => {
    const [sampleId, epoch, attempt, status, fingerprint, scores, inputTokens, outputTokens] = row;
    const [, , , , , , , , costUsd, error, startedAt, completedAt, durationMs, kind, source] = row;
    const [, , , , , , , , , , , , , , , redacted, retries, usageDetail, limitHit] = row;
    const mapped: AttemptHead = {
      runId,
      sampleId,
      epoch,
      attempt,
      status: statusOf(status, runId, row),
      fingerprint,
      scores: cached(scoresCache, scoresSchema, scores, row, "scores"),
      usage: toUsage(inputTokens, outputTokens, costUsd, usageDetail, () =>
        where(runId, row, "usage_detail"),
      ),
      error: error === null ? null : cached(errorCache, attemptErrorSchema, error, row, "error"),
      startedAt,
      completedAt,
      durationMs,
      provenance: toProvenance(kind, source, runId, row),
    };
    if (redacted !== null) {
      mapped.redacted = parseColumn(redactedSchema, redacted, where(runId, row, "redacted"));
    }
    // NULL: stored before retries were counted (unknown), so the field is absent.
    if (retries !== null) mapped.retries = retries;
    // NULL on every attempt no limit ended (and on rows stored before limits existed).
    if (limitHit !== null) {
      mapped.limit = parseColumn(attemptLimitSchema, limitHit, where(runId, row, "limit_hit"));
    }
    return mapped;
  };

  const full = (row: AttemptRow): Attempt => {
    const [, , , , , , , , , , , , , , , , , , , output, transcript] = row;
    // The head's fields, then these two: one object, not a head copied by a spread.
    const attempt = head(row) as Attempt;
    attempt.output = parseJsonColumn(output, () => where(runId, row, "output"));
    attempt.transcript =
      transcript === null
        ? null
        : parseJsonColumn(transcript, () => where(runId, row, "transcript"));
    return attempt;
  };

  return { head, full };
}

type AnyAttemptRow = AttemptHeadRow | AttemptRow;

/** Names a corrupt column; built only on failure, since a label per row costs more than mapping it. */
function where(runId: string, [sampleId, epoch, attempt]: AttemptKeyRow, column: string): string {
  return `${column} of attempt ${attempt} of ${runId}/${sampleId}#${epoch}`;
}

function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === "object" && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const member of Object.values(value)) deepFreeze(member);
  }
  return value;
}

/**
 * Usage from its columns: none when the tokens are NULL, no cost when the cost is, and the
 * detail (cached, cache-write and reasoning tokens, the reused part) from its JSON column when it
 * is not NULL (older rows have none). `what` names the detail column of a corrupt row.
 */
export function toUsage(
  inputTokens: number | null,
  outputTokens: number | null,
  costUsd: number | null,
  detail: string | null = null,
  what: () => string = () => "usage_detail",
): Usage | null {
  if (inputTokens === null || outputTokens === null) return null;
  const usage: Usage = { inputTokens, outputTokens };
  if (detail !== null) Object.assign(usage, parseColumn(usageDetailSchema, detail, what()));
  if (costUsd !== null) usage.costUsd = costUsd;
  return usage;
}

/**
 * The usage detail column of a usage: its cached, cache-write and reasoning tokens, its reused
 * part and the calls it carried from an errored attempt as JSON, or NULL when it has none of them (the common case stores nothing more).
 *
 * @example usageDetailText({ inputTokens: 9, outputTokens: 1, cachedInputTokens: 8 }) // '{"cachedInputTokens":8}'
 */
export function usageDetailText(usage: Usage | null | undefined): string | null {
  if (!usage) return null;
  const detail: UsageDetail = {};
  for (const tier of USAGE_TIERS) if (usage[tier] !== undefined) detail[tier] = usage[tier];
  if (usage.reused !== undefined) detail.reused = usage.reused;
  if (usage.carried !== undefined) detail.carried = usage.carried;
  return Object.keys(detail).length === 0 ? null : JSON.stringify(detail);
}

type UsageDetail = Omit<Usage, "inputTokens" | "outputTokens" | "costUsd">;

// Shared by every executed attempt a listing maps (frozen, like the shared scores).
const EXECUTED: Provenance = Object.freeze({ kind: "executed" });

function toProvenance(
  kind: string,
  source: string | null,
  runId: string,
  row: AnyAttemptRow,
): Provenance {
  if (kind === "executed") return EXECUTED;
  if (kind === "imported" && source !== null) return { kind, source };
  throw new StetError("E_STORE", `corrupt ${where(runId, row, "provenance")}: ${kind}`);
}

/** `undefined` (a solver that returned nothing) is stored as JSON null. */
export function jsonText(value: Json | undefined): string {
  return JSON.stringify(value ?? null);
}

/** A row of either adapter's outcome query: the key, its snapshot entry, then the outcome attempt. */
export type OutcomeRow = [
  sampleId: string,
  epoch: number,
  fingerprint: string,
  sample: string,
  attempts: number,
  ...head: AttemptHeadRow,
  output: string | null,
];

/** Maps an outcome row; a pending key (no outcome attempt) has a null `output` column. */
export function toOutcomeEntry(
  runId: string,
  row: OutcomeRow,
  head: (row: AttemptHeadRow) => AttemptHead,
): OutcomeEntry {
  const [sampleId, epoch, fingerprint, sample, attempts] = row;
  const headRow = row.slice(5, 24) as AttemptHeadRow;
  const output = row[24];
  const where = `${runId}/${sampleId}`;
  return {
    sampleId,
    epoch,
    fingerprint,
    sample: parseColumn(sampleSchema, sample, `sample snapshot of ${where}`),
    attempts,
    status: output === null ? "pending" : headRow[3] === "scored" ? "scored" : "error",
    outcome:
      output === null
        ? null
        : { ...head(headRow), output: parseJsonColumn(output, () => `output of ${where}`) },
  };
}

/**
 * The Attempt a commit stored: the draft with its run and attempt number. Listed field by field:
 * a spread plus two more properties builds an out-of-object property store per attempt, garbage
 * that showed up as old-generation growth at high throughput.
 */
export function storedAttempt(runId: string, attempt: number, draft: AttemptDraft): Attempt {
  const stored: Attempt = {
    runId,
    sampleId: draft.sampleId,
    epoch: draft.epoch,
    attempt,
    status: draft.status,
    output: draft.output,
    scores: draft.scores,
    usage: draft.usage,
    transcript: draft.transcript,
    error: draft.error,
    startedAt: draft.startedAt,
    completedAt: draft.completedAt,
    durationMs: draft.durationMs,
    fingerprint: draft.fingerprint,
    provenance: draft.provenance,
  };
  // Only a redacted attempt has the field: the common shape stays the common one.
  if (draft.redacted !== undefined) stored.redacted = draft.redacted;
  if (draft.retries !== undefined) stored.retries = draft.retries;
  if (draft.limit !== undefined) stored.limit = draft.limit;
  return stored;
}

/** A run's key counts from its count query's row: keys with attempts, and how many are scored. */
export function countsOf(
  run: Run,
  row: { keys: number; scored: number | null } | undefined,
): RunCounts {
  const total = run.sampleCount * run.config.epochs;
  const scored = row?.scored ?? 0;
  return { total, scored, errored: (row?.keys ?? 0) - scored, remaining: total - scored };
}

/** An owner's columns, as the INSERT and claim statements name their parameters. */
export function ownerParams(owner: OwnerIdentity): { host: string; pid: number; token: string } {
  return { host: owner.host, pid: owner.pid, token: owner.token };
}

/** The position after which the next page of attempt heads starts: (sample id, epoch, attempt). */
export type HeadCursor = Pick<AttemptHead, "sampleId" | "epoch" | "attempt">;

/** A row of attempts that starts with its key and number. */
export type AttemptKeyRow = [sampleId: string, epoch: number, attempt: number, ...rest: unknown[]];

/** What `attemptFactPages` reads of a row of `attempts_now`, in ATTEMPT_FACT_COLUMNS' order. */
export type AttemptFactRow = [
  sampleId: string,
  epoch: number,
  attempt: number,
  status: string,
  fingerprint: string,
  provenanceKind: string,
  costUsd: number | null,
];

export const ATTEMPT_FACT_COLUMNS = `sample_id, epoch, attempt, status, fingerprint,
  provenance_kind, cost_usd`;

/**
 * An attempt's facts from its row (see `attemptFactPages`), with no parse: a status that is not
 * one is a corrupt store, as for `head`.
 */
export function toAttemptFact(runId: string, row: AttemptFactRow): AttemptFact {
  const [sampleId, epoch, attempt, status, fingerprint, kind, costUsd] = row;
  const executed = kind === "executed";
  return {
    sampleId,
    epoch,
    attempt,
    status: statusOf(status, runId, row),
    fingerprint,
    executed,
    costUsd,
  };
}

/** A row's status as stored; anything else is a corrupt store, named by the row. */
function statusOf(status: string, runId: string, row: AttemptKeyRow): AttemptStatus {
  if (status === "scored" || status === "error") return status;
  throw new StetError("E_STORE", `corrupt ${where(runId, row, "status")}: ${status}`);
}

/**
 * The key range a listing is filtered by (a sample, an epoch, a range of sample ids: the keys of
 * a page of attempts) as named parameters of either adapter's statement, null where absent.
 *
 * @example keyRangeParams({ fromSampleId: "a", toSampleId: "m" }).sampleId // null
 */
export function keyRangeParams(filter: {
  sampleId?: string;
  epoch?: number;
  fromSampleId?: string;
  toSampleId?: string;
}) {
  return {
    sampleId: filter.sampleId ?? null,
    epoch: filter.epoch ?? null,
    fromSampleId: filter.fromSampleId ?? null,
    toSampleId: filter.toSampleId ?? null,
  };
}

/** The named parameters of either adapter's outcome query. */
export function outcomeParams(runId: string, epochs: number, filter: OutcomeFilter) {
  return {
    runId,
    epochs,
    sampleId: filter.sampleId ?? null,
    status: filter.status ?? null,
    scorer: filter.scorer ?? null,
    result: filter.result ?? null,
    search: filter.search ?? null,
  };
}

/** A page of the attempt feed from rows of (cursor, ...head), and the cursor to go on from. */
export function feedPage(
  runId: string,
  rows: [number, ...AttemptHeadRow][],
  after: number,
): AttemptFeed {
  const map = attemptMapper(runId);
  return {
    attempts: rows.map(([, ...head]) => map.head(head)),
    cursor: rows.at(-1)?.[0] ?? after,
  };
}

export function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
