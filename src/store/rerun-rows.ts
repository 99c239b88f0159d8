import { rerunRequestSchema } from "../core/schemas.js";
import type { OutcomeAsk, RerunRecord, RerunRequest } from "../core/types.js";
import * as z from "zod";
import { invalidInput } from "./checks.js";

/** A re-run request's row (`rerun_requests`, SQLite migration 20, PostgreSQL 19). */
export interface RerunRow {
  sample_id: string;
  epoch: number;
  after_attempt: number;
}

// The first conjunct bounds the index range, so a page starts where the last ended (PostgreSQL
// reads an OR of the two alone as a filter over every request before it: quadratic).
const KEYSET = `r.sample_id >= CAST(@afterId AS TEXT)
      AND (r.sample_id > CAST(@afterId AS TEXT) OR r.epoch > CAST(@afterEpoch AS INTEGER))`;

/** The statements both dialects share: a keyset page in key order, and a run's requests cleared. */
export const RERUN_SQL = {
  page: `SELECT sample_id, epoch, after_attempt FROM rerun_requests AS r
    WHERE r.run_id = @runId AND ${KEYSET}
    ORDER BY r.sample_id, r.epoch LIMIT CAST(@limit AS INTEGER)`,
  clear: `DELETE FROM rerun_requests WHERE run_id = @runId`,
  figuresBuilt: `SELECT 1 AS built FROM run_figures WHERE run_id = @runId`,
};

/**
 * Whether request `r` is done: its key's outcome, as the run's figures keep it (`sample_figures`,
 * by epoch), is a scored attempt numbered after the one the request follows. Done is for good
 * (attempts are never removed), and a done request changes no plan. A run whose figures are not
 * built yet has none done.
 */
function doneSql(dialect: "sqlite" | "postgres"): string {
  const key =
    dialect === "sqlite"
      ? `json_extract(f.figures, '$."' || r.epoch || '"')`
      : "(f.figures::jsonb -> r.epoch::text)";
  return `EXISTS (
    SELECT 1 FROM sample_figures f WHERE f.run_id = r.run_id AND f.sample_id = r.sample_id
      AND ${doneOf(dialect, key, "r.after_attempt")})`;
}

/** A key's figures (`key`, JSON: SQLite's text, PostgreSQL's jsonb) field by field. */
export function keyField(
  dialect: "sqlite" | "postgres",
  key: string,
  path: "status" | "attempt" | "error.type",
): string {
  if (dialect === "sqlite") return `json_extract(${key}, '$.${path}')`;
  if (path === "error.type") return `(${key} -> 'error' ->> 'type')`;
  return path === "attempt" ? `(${key} ->> 'attempt')::int` : `(${key} ->> '${path}')`;
}

/** Whether a key whose figures are `key` is done for a request following attempt `after`. */
export function doneOf(dialect: "sqlite" | "postgres", key: string, after: string): string {
  return `${keyField(dialect, key, "status")} = 'scored' AND ${keyField(dialect, key, "attempt")} > ${after}`;
}

/** A keyset page of the run's requests that are not done (`doneSql`), in key order. */
export function openRerunPageSql(dialect: "sqlite" | "postgres"): string {
  return `SELECT sample_id, epoch, after_attempt FROM rerun_requests AS r
    WHERE r.run_id = @runId AND ${KEYSET} AND NOT ${doneSql(dialect)}
    ORDER BY r.sample_id, r.epoch LIMIT CAST(@limit AS INTEGER)`;
}

/**
 * Deletes the run's requests that are done (`doneSql`): what the owner's release does, so a
 * finished re-run's requests are not read by every report after it.
 */
export function pruneRerunsSql(dialect: "sqlite" | "postgres"): string {
  return `DELETE FROM rerun_requests AS r WHERE r.run_id = @runId AND ${doneSql(dialect)}`;
}

/**
 * The keys `OutcomeAsk` names of the run's stored outcomes, in key order, each after its key's last
 * attempt: the outcome as the run's figures keep it (`sample_figures`, by epoch; see `KeyFigures`)
 * is scored and, with `@failed`, one of its scores that count is below 1, or, with `@limited`, a
 * per-sample limit ended it. `page`: a keyset page (from `@afterId`, `@afterEpoch`, `@limit` rows),
 * read in the figures' key order, so a page stops where it fills. A run whose figures are not built
 * names none (a caller reads its figures first).
 */
export function askedRerunsSql(dialect: "sqlite" | "postgres", page: boolean): string {
  const sqlite = dialect === "sqlite";
  const epoch = sqlite ? "CAST(e.key AS INTEGER)" : "e.key::int";
  const from = sqlite
    ? "sample_figures AS f, json_each(f.figures) AS e"
    : "sample_figures AS f CROSS JOIN LATERAL jsonb_each(f.figures::jsonb) AS e(key, value)";
  const status = sqlite ? "json_extract(e.value, '$.status')" : "e.value ->> 'status'";
  const below = sqlite
    ? "SELECT 1 FROM json_each(e.value, '$.values') AS v WHERE json_extract(v.value, '$[1]') < 1"
    : "SELECT 1 FROM jsonb_array_elements(e.value -> 'values') AS v WHERE (v ->> 1)::float8 < 1";
  const limited = sqlite
    ? "json_extract(e.value, '$.limit') IS NOT NULL"
    : "(e.value -> 'limit') IS NOT NULL";
  const flag = (name: string) => (sqlite ? `@${name} = 1` : `CAST(@${name} AS boolean)`);
  const keyset = page
    ? `AND f.sample_id >= CAST(@afterId AS TEXT)
      AND (f.sample_id > CAST(@afterId AS TEXT) OR ${epoch} > CAST(@afterEpoch AS INTEGER))`
    : "";
  const order = page ? `ORDER BY f.sample_id, ${epoch} LIMIT CAST(@limit AS INTEGER)` : "";
  return `SELECT f.sample_id AS sample_id, ${epoch} AS epoch,
      (SELECT MAX(a.attempt) FROM attempts AS a
        WHERE a.run_id = f.run_id AND a.sample_id = f.sample_id AND a.epoch = ${epoch}) AS after_attempt
    FROM ${from}
    WHERE f.run_id = @runId ${keyset}
      AND ${status} = 'scored'
      AND ((${flag("failed")} AND EXISTS (${below})) OR (${flag("limited")} AND ${limited}))
    ${order}`;
}

/**
 * Records the keys `OutcomeAsk` names (`askedRerunsSql`), each replacing the recorded request of
 * its key: what a claim asking them writes, after the recorded ones done are let go.
 */
export function recordAskedSql(dialect: "sqlite" | "postgres"): string {
  // SQLite reads `SELECT ... ON CONFLICT` as a join unless the SELECT has a WHERE.
  return `INSERT INTO rerun_requests (run_id, sample_id, epoch, after_attempt)
    SELECT @runId, sample_id, epoch, after_attempt FROM (${askedRerunsSql(dialect, false)}) AS asked
    WHERE true
    ${UPSERT}`;
}

/** A recorded request's key asked again follows the key's last attempt now. */
export const UPSERT =
  "ON CONFLICT (run_id, sample_id, epoch) DO UPDATE SET after_attempt = excluded.after_attempt";

/** `reads.rerunPages`' options. */
export interface RerunPagesOptions {
  open?: boolean;
  asked?: OutcomeAsk;
}

/** An `OutcomeAsk`'s parameters to `askedRerunsSql` (1 or 0: SQLite binds no booleans). */
export function askedFlags(asked: OutcomeAsk): { failed: number; limited: number } {
  return { failed: asked.failed ? 1 : 0, limited: asked.limited ? 1 : 0 };
}

/** How many requests one statement writes. */
export const RERUN_ROWS_A_STATEMENT = 5_000;

/** A `RerunRecord` that keeps the recorded requests not done and adds asked ones. */
export type AskedRecord = Extract<RerunRecord, { asked: true }>;

export function isAsked(record: RerunRecord): record is AskedRecord {
  return "asked" in record;
}

/** Refuses a malformed `RerunRecord` (`checkReruns`) before anything is written: its listed requests. */
export function checkRerunRecord(record: RerunRecord): readonly RerunRequest[] {
  const listed = isAsked(record) ? record.added : record;
  checkReruns(listed);
  return listed;
}

/**
 * Why requests asked of a run's outcomes are not recorded: its figures, which name them, are not
 * built yet (a run stored before them; the first read of its figures builds them).
 */
export function figuresNotBuilt(runId: string): Error {
  return invalidInput(
    `re-run requests asked of run ${runId}'s outcomes need its figures: read them first`,
  );
}

/**
 * Refuses requests that are not one a key of well-formed keys (`E_INVALID_INPUT`), before
 * anything is written.
 */
export function checkReruns(reruns: readonly RerunRequest[]): void {
  const parsed = z.array(rerunRequestSchema).safeParse(reruns);
  if (!parsed.success) throw invalidInput(`re-run requests: ${z.prettifyError(parsed.error)}`);
  const seen = new Set<string>();
  for (const { sampleId, epoch } of reruns) {
    const key = `${sampleId}\u0000${epoch}`;
    if (seen.has(key)) {
      throw invalidInput(`re-run requests: key ${sampleId}#${epoch} is asked twice`);
    }
    seen.add(key);
  }
}

/**
 * A run's requests a page at a time, in key order, each page read by `read` after the last key of
 * the one before (keyset: no cursor stays open between pages).
 */
export async function* readRerunPages(
  pageSize: number,
  read: (afterId: string, afterEpoch: number, limit: number) => Promise<RerunRow[]>,
): AsyncIterable<RerunRequest[]> {
  let afterId = "";
  let afterEpoch = 0;
  for (;;) {
    const rows = await read(afterId, afterEpoch, pageSize);
    if (rows.length === 0) return;
    yield rows.map((r) => ({ sampleId: r.sample_id, epoch: r.epoch, after: r.after_attempt }));
    if (rows.length < pageSize) return;
    const last = rows[rows.length - 1]!;
    afterId = last.sample_id;
    afterEpoch = last.epoch;
  }
}
