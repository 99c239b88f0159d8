import type { Attempt } from "../core/types.js";
import {
  attemptMapper,
  toAttemptFact,
  type AttemptFactRow,
  type AttemptHeadRow,
  type AttemptKeyRow,
  type AttemptRow,
  type HeadCursor,
} from "./rows.js";
import type { AttemptFact, AttemptHead, RunPart } from "./types.js";

/**
 * Folds keyset pages of attempt heads in key order: `fetch` reads up to `limit` rows after the
 * cursor, and a short or empty page ends it. Pages are read one by one, not from one open
 * cursor, so other statements (and other processes' commits) may come between them: `newest`,
 * read once before the first page, is the run's last committed attempt in commit order, and every
 * page holds only attempts up to it. The pages are then one prefix of the commit order, as a
 * single statement would have seen it, however many attempts other workers commit meanwhile.
 *
 * @example yield* headPages(runId, 1_000, newest, (after, limit, upTo) => page.all(...));
 */
export function headPages(
  runId: string,
  pageSize: number,
  newest: () => Promise<number>,
  fetch: (after: HeadCursor, limit: number, upTo: number) => Promise<AttemptHeadRow[]>,
): AsyncIterable<AttemptHead[]> {
  const head = attemptMapper(runId).head;
  return keyPages(pageSize, newest, fetch, (rows) => rows.map(head));
}

/**
 * Keyset pages of attempt rows in key order, each page mapped by `map` (see `headPages`: how
 * `newest` keeps the pages to one prefix of the commit order). Every row starts with its key and
 * number, the cursor of the next page. With `start`, the pages begin after its sample id and stop
 * at its commit when it names one (`newest` is then not read).
 */
export async function* keyPages<Row extends AttemptKeyRow, T>(
  pageSize: number,
  newest: () => Promise<number>,
  fetch: (after: HeadCursor, limit: number, upTo: number) => Promise<Row[]>,
  map: (rows: Row[]) => T[],
  start?: RunPart,
): AsyncIterable<T[]> {
  const upTo = start?.upTo ?? (await newest());
  let after = startCursor(start?.afterSampleId ?? "");
  for (;;) {
    const rows = await fetch(after, pageSize, upTo);
    if (rows.length === 0) return;
    const [sampleId, epoch, attempt] = rows[rows.length - 1]!;
    after = { sampleId, epoch, attempt };
    yield map(rows);
    if (rows.length < pageSize) return;
  }
}

/** Pages of attempt facts (see `headPages`), each row mapped by `toAttemptFact`. */
export function factPages(
  runId: string,
  pageSize: number,
  newest: () => Promise<number>,
  fetch: (after: HeadCursor, limit: number, upTo: number) => Promise<AttemptFactRow[]>,
): AsyncIterable<AttemptFact[]> {
  return keyPages(pageSize, newest, fetch, (rows) => rows.map((row) => toAttemptFact(runId, row)));
}

/**
 * Keyset pages of whole attempts (outputs and transcripts included) in key order, as
 * `headPages` reads heads: `fetch` reads up to `limit` rows after the cursor and up to `upTo`
 * (the run's newest attempt in commit order, read once first), and a short or empty page ends
 * it. What copies a large run's attempts without holding them all (reuse's seeding), and what
 * an export reads, a part of the run at a time from `start` when it reads in parallel.
 *
 * @example yield* attemptPages(runId, 1_000, newest, (after, limit, upTo) => page.all(...));
 */
export function attemptPages(
  runId: string,
  pageSize: number,
  newest: () => Promise<number>,
  fetch: (after: HeadCursor, limit: number, upTo: number) => Promise<AttemptRow[]>,
  start?: RunPart,
): AsyncIterable<Attempt[]> {
  // A mapper per page: its caches of parsed scores and errors live as long as the page.
  return keyPages(pageSize, newest, fetch, (rows) => rows.map(attemptMapper(runId).full), start);
}

/** The cursor before every attempt of the samples after `sampleId` ("": before the first). */
function startCursor(sampleId: string): HeadCursor {
  // Past every epoch and attempt of `sampleId` itself (both are 32-bit integers in both stores).
  const past = sampleId === "" ? 0 : 2_147_483_647;
  return { sampleId, epoch: past, attempt: past };
}
