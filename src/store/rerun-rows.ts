import { rerunRequestSchema } from "../core/schemas.js";
import type { RerunRequest } from "../core/types.js";
import * as z from "zod";
import { invalidInput } from "./checks.js";

/** A re-run request's row (`rerun_requests`, SQLite migration 20, PostgreSQL 19). */
export interface RerunRow {
  sample_id: string;
  epoch: number;
  after_attempt: number;
}

const KEYSET = `(r.sample_id > CAST(@afterId AS TEXT)
      OR (r.sample_id = CAST(@afterId AS TEXT) AND r.epoch > CAST(@afterEpoch AS INTEGER)))`;

/** The statements both dialects share: a keyset page in key order, and a run's requests cleared. */
export const RERUN_SQL = {
  page: `SELECT sample_id, epoch, after_attempt FROM rerun_requests AS r
    WHERE r.run_id = @runId AND ${KEYSET}
    ORDER BY r.sample_id, r.epoch LIMIT CAST(@limit AS INTEGER)`,
  clear: `DELETE FROM rerun_requests WHERE run_id = @runId`,
};

/**
 * Whether request `r` is done: its key's outcome, as the run's figures keep it (`sample_figures`,
 * by epoch), is a scored attempt numbered after the one the request follows. Done is for good
 * (attempts are never removed), and a done request changes no plan. A run whose figures are not
 * built yet has none done.
 */
function doneSql(dialect: "sqlite" | "postgres"): string {
  const field = (name: string) =>
    dialect === "sqlite"
      ? `json_extract(f.figures, '$."' || r.epoch || '".${name}')`
      : `(f.figures::jsonb -> r.epoch::text ->> '${name}')`;
  const attempt = dialect === "sqlite" ? field("attempt") : `${field("attempt")}::int`;
  return `EXISTS (
    SELECT 1 FROM sample_figures f WHERE f.run_id = r.run_id AND f.sample_id = r.sample_id
      AND ${field("status")} = 'scored' AND ${attempt} > r.after_attempt)`;
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

/** How many requests one statement writes. */
export const RERUN_ROWS_A_STATEMENT = 5_000;

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
