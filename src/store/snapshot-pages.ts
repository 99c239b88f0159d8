import { StetError } from "../core/errors.js";
import type { SampleRecord } from "../core/types.js";
import type { NewRun } from "./types.js";

/**
 * A new run's snapshot given in pages (`NewRun.samples`), read one at a time: what the adapters
 * share to write it without holding it whole.
 */
export type SamplePages = AsyncIterable<readonly SampleRecord[]>;

/**
 * Whether a snapshot comes in pages rather than as one array.
 *
 * @example if (isSamplePages(input.samples)) return createFromPages(input, input.samples);
 */
export function isSamplePages(samples: NewRun["samples"]): samples is SamplePages {
  return !Array.isArray(samples);
}

/**
 * The error for a paged snapshot that repeats a sample id: the id and both places it stands, as
 * positions in the stream of samples (from 0, in the order they were given), which a caller that
 * knows where each came from (a dataset's rows) can word again from `details`.
 *
 * @example throw repeatedSampleId("s2", 2, 5_003); // E_DUPLICATE_ID
 */
export function repeatedSampleId(id: string, first: number, second: number): StetError {
  return new StetError(
    "E_DUPLICATE_ID",
    `two samples have the id "${id}": samples ${first} and ${second} of the snapshot (from 0)`,
    { details: { id, positions: [first, second] } },
  );
}

/**
 * Finds the first sample of `records` (the samples from position `start` on) whose id stands
 * earlier: earlier among them, or before `start`, as `earlier` says (the store's written rows).
 * Holds one page's ids, never the snapshot's.
 *
 * @example const repeat = firstRepeat(page, 5_000, (id) => stagedPosition(id));
 */
export function firstRepeat(
  records: readonly SampleRecord[],
  start: number,
  earlier: (id: string) => number | undefined,
): StetError | undefined {
  const here = new Map<string, number>();
  for (const [offset, { sample }] of records.entries()) {
    const position = start + offset;
    const first = here.get(sample.id) ?? earlier(sample.id);
    if (first !== undefined) return repeatedSampleId(sample.id, first, position);
    here.set(sample.id, position);
  }
  return undefined;
}
