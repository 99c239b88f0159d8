import type { Json } from "../core/json.js";
import { byteOrder } from "../core/keys.js";
import { selectOutcomes } from "../core/outcomes.js";
import type { Attempt, SampleRecord } from "../core/types.js";
import type { AttemptHead, RunPart, Store } from "../store/types.js";
import { applyReviews } from "./review-grades.js";
import { loadTrajectories } from "./trajectory.js";

/** A snapshot sample as a page gives it: its id and fingerprint, and the whole sample if asked. */
export interface PagedSample {
  id: string;
  fingerprint: string;
  /** The snapshot's record (input, target, metadata), with `samples: "whole"`. */
  record?: SampleRecord;
}

/** One sample of the snapshot with its keys' current outcomes, in epoch order. */
export interface SampleOutcomes<A> {
  sample: PagedSample;
  outcomes: A[];
}

/** A page of samples in key order, with what the page's outcomes carry. */
export interface OutcomePage<A> {
  samples: SampleOutcomes<A>[];
  /** An outcome's trajectory (its step journal), with `journal`. */
  journalOf: (a: Attempt | AttemptHead) => Json[] | undefined;
  /** An outcome's current reviews as exports write them, with `reviews`. */
  reviewsOf: (a: Attempt | AttemptHead) => Json[] | undefined;
}

export interface OutcomePagesOptions {
  /** Read the samples' inputs, targets and metadata (else ids and fingerprints only). */
  samples?: "whole" | "fingerprints";
  /** Read each page's step journals. */
  journal?: boolean;
  /** Read each page's reviews and apply them (a pending `human` grader takes them). */
  reviews?: boolean;
  /** Samples (and their attempts) per page; 1,000 by default. */
  pageSize?: number;
  /** Only this part of the run (`RunPart`): what one of a parallel export's readers reads. */
  part?: RunPart;
}

/**
 * A run's keys and their current outcomes (`selectOutcomes`: per key the latest scored attempt
 * for the sample's snapshot fingerprint, else its latest error), a page of samples at a time in
 * key order (sample id in byte order, then epoch), joined with the attempts' pages: the run is
 * never held whole, only a page of samples and the attempts up to its last one, with their
 * journal entries and reviews when asked (each read for the page's range of sample ids).
 * `attempts` picks whole attempts (outputs, transcripts) or heads. What `stet export` streams.
 *
 * @example for await (const page of outcomePages(store, id, "whole", { journal: true })) write(page);
 */
export function outcomePages(
  store: Store,
  runId: string,
  attempts: "whole",
  options?: OutcomePagesOptions,
): AsyncIterable<OutcomePage<Attempt>>;
export function outcomePages(
  store: Store,
  runId: string,
  attempts: "heads",
  options?: OutcomePagesOptions,
): AsyncIterable<OutcomePage<AttemptHead>>;
export async function* outcomePages(
  store: Store,
  runId: string,
  attempts: "whole" | "heads",
  options: OutcomePagesOptions = {},
): AsyncIterable<OutcomePage<Attempt | AttemptHead>> {
  const pageSize = options.pageSize ?? 1_000;
  const { part } = options;
  if (part !== undefined && attempts !== "whole") {
    throw new Error("outcomePages reads a part of a run's whole attempts only");
  }
  const attemptPages =
    attempts === "whole"
      ? store.reads.attemptPages(runId, pageSize, part)
      : store.reads.attemptHeadPages(runId, pageSize);
  const pages = withAttempts<PagedSample, Attempt | AttemptHead>(
    snapshotPages(store, runId, options.samples, pageSize, part),
    (s) => s.id,
    attemptPages,
  );
  for await (const { samples, attempts: mine } of pages) {
    const last = samples[samples.length - 1]!.id;
    const fingerprints = new Map(samples.map((s) => [s.id, s.fingerprint]));
    let outcomes = selectOutcomes(mine, fingerprints);
    const range = { fromSampleId: samples[0]!.id, toSampleId: last };
    let reviewsOf: OutcomePage<Attempt>["reviewsOf"] = () => undefined;
    const reviews =
      options.reviews && outcomes.length > 0 ? await store.reviews.list(runId, range) : [];
    // Most pages have no review: then nothing is applied (a map of the page's keys saved).
    if (reviews.length > 0) {
      const reviewed = applyReviews(outcomes, reviews);
      outcomes = reviewed.outcomes;
      reviewsOf = reviewed.reviewsOf;
    }
    const journalOf =
      options.journal && outcomes.length > 0
        ? await loadTrajectories(store, runId, range)
        : () => undefined;
    yield { samples: groupBySample(samples, outcomes), journalOf, reviewsOf };
  }
}

/**
 * Each non-empty page of samples (in sample-id order) with the attempts of its samples, taken from
 * the attempts' pages (in key order) up to the page's last sample: a page of samples and the
 * attempts up to its end are held at a time, never the run.
 *
 * @example for await (const { samples, attempts } of withAttempts(pages, (s) => s.id, attemptPages)) fold(attempts);
 */
export async function* withAttempts<S, A extends { sampleId: string }>(
  samplePages: AsyncIterable<S[]>,
  idOf: (sample: S) => string,
  attemptPages: AsyncIterable<A[]>,
): AsyncIterable<{ samples: S[]; attempts: A[] }> {
  const source = attemptPages[Symbol.asyncIterator]();
  let held: A[] = [];
  let done = false;
  for await (const samples of samplePages) {
    if (samples.length === 0) continue;
    const last = idOf(samples[samples.length - 1]!);
    // Read attempts until one lies past the page's last sample: the page's are all held then.
    while (!done && (held.length === 0 || byteOrder(held[held.length - 1]!.sampleId, last) <= 0)) {
      const next = await source.next();
      if (next.done) done = true;
      else held = held.length === 0 ? next.value : [...held, ...next.value];
    }
    let end = 0;
    while (end < held.length && byteOrder(held[end]!.sampleId, last) <= 0) end++;
    yield { samples, attempts: held.slice(0, end) };
    held = held.slice(end);
  }
}

/**
 * The snapshot's pages, whole or ids and fingerprints only, as `PagedSample`s; of a `part`, its
 * samples only (the pages cut at its last sample, none read after the page that holds it).
 */
async function* snapshotPages(
  store: Store,
  runId: string,
  what: OutcomePagesOptions["samples"],
  pageSize: number,
  part: RunPart | undefined,
): AsyncIterable<PagedSample[]> {
  const pages =
    what === "whole"
      ? mapPages(store.reads.samplePages(runId, pageSize, part), (record) => ({
          id: record.sample.id,
          fingerprint: record.fingerprint,
          record,
        }))
      : mapPages(store.reads.sampleFingerprintPages(runId, pageSize, part), (f) => ({
          id: f.sampleId,
          fingerprint: f.fingerprint,
        }));
  const last = part?.lastSampleId;
  for await (const page of pages) {
    if (last === undefined) {
      yield page;
      continue;
    }
    let end = 0;
    while (end < page.length && byteOrder(page[end]!.id, last) <= 0) end++;
    if (end > 0) yield end === page.length ? page : page.slice(0, end);
    if (end < page.length || page[end - 1]?.id === last) return;
  }
}

async function* mapPages<T, U>(pages: AsyncIterable<T[]>, map: (row: T) => U): AsyncIterable<U[]> {
  for await (const page of pages) yield page.map(map);
}

/** The outcomes (in key order) given to their samples (in the same order). */
function groupBySample<A extends { sampleId: string }>(
  samples: readonly PagedSample[],
  outcomes: readonly A[],
): SampleOutcomes<A>[] {
  const out: SampleOutcomes<A>[] = [];
  let i = 0;
  for (const sample of samples) {
    const start = i;
    while (i < outcomes.length && outcomes[i]!.sampleId === sample.id) i++;
    out.push({ sample, outcomes: outcomes.slice(start, i) });
  }
  return out;
}

/** Sample ids' order in both stores (UTF-8 bytes); kept here for the modules that import it. */
export { byteOrder } from "../core/keys.js";
