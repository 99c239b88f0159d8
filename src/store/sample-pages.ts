import { byteOrder } from "../core/keys.js";
import type { SampleRecord } from "../core/types.js";
import { toSampleRecord, type SampleRow } from "./rows.js";
import type { RunPart } from "./types.js";

/** A snapshot row as a page of ids and fingerprints reads it. */
export interface FingerprintRow {
  sample_id: string;
  fingerprint: string;
}

/** A snapshot row as a page of whole samples reads it. */
export interface SamplePageRow extends SampleRow {
  sample_id: string;
}

/**
 * The SQL both adapters page a run's snapshot with (`@name` parameters, compiled by each): keyset
 * by sample id, byte order (SQLite's BINARY, PostgreSQL's `COLLATE "C"` column), as the attempts'
 * pages are ordered, so a reader can join the two page by page.
 */
export const SAMPLE_PAGE_SQL = {
  fingerprints: `SELECT sample_id, fingerprint FROM samples
    WHERE run_id = @runId AND sample_id > CAST(@after AS TEXT)
    ORDER BY sample_id LIMIT CAST(@limit AS INTEGER)`,
  whole: `SELECT sample_id, sample, fingerprint FROM samples
    WHERE run_id = @runId AND sample_id > CAST(@after AS TEXT)
    ORDER BY sample_id LIMIT CAST(@limit AS INTEGER)`,
  // A sample's place (how many sort before it) and the id before it ("" for the first): one seek
  // and a count of the index entries before it.
  place: `SELECT
      (SELECT count(*) FROM samples WHERE run_id = @runId AND sample_id < CAST(@id AS TEXT)) AS place,
      (SELECT max(sample_id) FROM samples WHERE run_id = @runId AND sample_id < CAST(@id AS TEXT))
        AS previous
    FROM samples WHERE run_id = @runId AND sample_id = CAST(@id AS TEXT)`,
  // The `count`-th sample id after `after`: where a part of a parallel read ends.
  mark: `SELECT sample_id FROM samples
    WHERE run_id = @runId AND sample_id > CAST(@after AS TEXT)
    ORDER BY sample_id LIMIT 1 OFFSET CAST(@skip AS INTEGER)`,
} as const;

/** A fingerprint row as SQLite reads it: an array in SELECT order, no object per row. */
export type RawFingerprintRow = [sample_id: string, fingerprint: string];

/**
 * Keyset pages of a run's snapshot rows in sample-id order: `fetch` reads up to `limit` rows
 * after the last sample id read (`idOf` a row; by default its `sample_id` column), from the first
 * row or after `start.afterSampleId`, and a short or empty page ends it.
 *
 * @example yield* snapshotPages(1_000, (after, limit) => page.all({ runId, after, limit }), toRecord);
 */
export async function* snapshotPages<Row, T>(
  pageSize: number,
  fetch: (after: string, limit: number) => Promise<Row[]>,
  map: (row: Row) => T,
  idOf: (row: Row) => string = (row) => (row as { sample_id: string }).sample_id,
  start?: RunPart,
): AsyncIterable<T[]> {
  let after = start?.afterSampleId ?? "";
  for (;;) {
    const rows = await fetch(after, pageSize);
    if (rows.length === 0) return;
    after = idOf(rows[rows.length - 1]!);
    yield rows.map(map);
    if (rows.length < pageSize) return;
  }
}

/** A fingerprint row as the port gives it. */
export const toFingerprint = (row: FingerprintRow) => ({
  sampleId: row.sample_id,
  fingerprint: row.fingerprint,
});

/** A page's whole-sample row as the port gives it (the snapshot parsed, as `getSamples`'). */
export const sampleMapper =
  (runId: string) =>
  (row: SamplePageRow): SampleRecord =>
    toSampleRecord(row, runId);

/**
 * A raw fingerprint row as the port gives it. better-sqlite3 builds a row as an array faster
 * than as an object: reading a 1,000,000-sample snapshot's fingerprints took 1.0 s of CPU against
 * 1.6 s.
 */
export const toFingerprintFromRaw = ([sampleId, fingerprint]: RawFingerprintRow) => ({
  sampleId,
  fingerprint,
});

/**
 * Sample ids as the lists a read by ids binds (SQLite's `json_each`, PostgreSQL's arrays),
 * `size` at a time: no statement binds an unbounded list. Given in byte order, each once
 * (`distinctIds`), the pages' rows come out in the stores' id order.
 *
 * @example for (const ids of idPages(distinctIds(["b", "a", "b"]))) ids; // ["a", "b"]
 */
export function idPages(sampleIds: readonly string[], size = 1_000): string[][] {
  const pages: string[][] = [];
  for (let i = 0; i < sampleIds.length; i += size) pages.push(sampleIds.slice(i, i + size));
  return pages;
}

/** Sample ids each once, in byte order (the stores' id order). */
export const distinctIds = (sampleIds: Iterable<string>): string[] =>
  [...new Set(sampleIds)].sort(byteOrder);
