import type { Attempt } from "../core/types.js";
import { attemptMapper, type AttemptRow, type HeadCursor } from "./rows.js";

/**
 * Keyset pages of whole attempts (outputs and transcripts included) in key order, as
 * `headPages` reads heads: `fetch` reads up to `limit` rows after the cursor and up to `upTo`
 * (the run's newest attempt in commit order, read once first), and a short or empty page ends
 * it. What copies a large run's attempts without holding them all (reuse's seeding).
 *
 * @example yield* attemptPages(runId, 1_000, newest, (after, limit, upTo) => page.all(...));
 */
export async function* attemptPages(
  runId: string,
  pageSize: number,
  newest: () => Promise<number>,
  fetch: (after: HeadCursor, limit: number, upTo: number) => Promise<AttemptRow[]>,
): AsyncIterable<Attempt[]> {
  const upTo = await newest();
  let after: HeadCursor = { sampleId: "", epoch: 0, attempt: 0 };
  for (;;) {
    const rows = await fetch(after, pageSize, upTo);
    if (rows.length === 0) return;
    // A mapper per page: its caches of parsed scores and errors live as long as the page.
    const page = rows.map(attemptMapper(runId).full);
    const last = page[page.length - 1]!;
    after = { sampleId: last.sampleId, epoch: last.epoch, attempt: last.attempt };
    yield page;
    if (rows.length < pageSize) return;
  }
}
