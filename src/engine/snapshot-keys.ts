import { keyString } from "../core/keys.js";
import { planRun, type Plan } from "../core/plan.js";
import type { Key, SampleRecord } from "../core/types.js";
import type { Store } from "../store/types.js";
import type { KeySource } from "./lease-source.js";

/** A key of the snapshot to execute: its sample's record and place, and what it replays. */
export interface SnapshotEntry {
  record: SampleRecord;
  /** The sample's place in the snapshot, in sample-id order (0-based). */
  index: number;
  epoch: number;
  /** The errored attempt whose journal its new attempt replays (see Plan.replayFrom). */
  replayFrom?: number;
  /** The attempt a re-run request has its new attempt follow (see Plan.rerunAfter). */
  rerunAfter?: number;
}

/**
 * A key read from the run's snapshot: its two fields, and its sample's record, place and replay
 * in a private field, which no spread, `JSON.stringify` or `Object.keys` sees (a draft made from
 * it carries the key alone).
 */
class SnapshotKey implements Key {
  readonly sampleId: string;
  readonly epoch: number;
  readonly #entry: SnapshotEntry;

  constructor(entry: SnapshotEntry) {
    this.sampleId = entry.record.sample.id;
    this.epoch = entry.epoch;
    this.#entry = entry;
  }

  static entryOf(key: Key): SnapshotEntry | undefined {
    return #entry in key ? (key as SnapshotKey).#entry : undefined;
  }
}

/** A key that carries its sample's record, place and replay (as `SnapshotKeys`' do). */
export function snapshotKey(entry: SnapshotEntry): Key {
  return new SnapshotKey(entry);
}

/** The record a key of `SnapshotKeys` carries; undefined for any other key. */
export function snapshotRecordOf(key: Key): SampleRecord | undefined {
  return SnapshotKey.entryOf(key)?.record;
}

/** The place in the snapshot (sample-id order) a key of `SnapshotKeys` carries its sample at. */
export function snapshotIndexOf(key: Key): number | undefined {
  return SnapshotKey.entryOf(key)?.index;
}

/** The errored attempt a key of a resume's `SnapshotKeys` replays the journal of, if any. */
export function snapshotReplayOf(key: Key): number | undefined {
  return SnapshotKey.entryOf(key)?.replayFrom;
}

/** The attempt a key of a resume's `SnapshotKeys` is re-run after (a re-run request), if any. */
export function snapshotRerunAfterOf(key: Key): number | undefined {
  return SnapshotKey.entryOf(key)?.rerunAfter;
}

/**
 * What `SnapshotKeys` plans each page with for a resume: the run's keys dispatched but never
 * committed (the run's in-flight marks, a few per slot). Absent: a new run, every key executes.
 */
export interface SnapshotResume {
  inflight: readonly Key[];
  /** Re-run keys whose latest attempt is an error (`PlanInput.rerunErrors`, default true). */
  rerunErrors?: boolean;
}

/** A page of the run's snapshot, its first sample's place, and the page's plan (`plannedPages`). */
export interface PlannedPage {
  records: SampleRecord[];
  /** The place of `records[0]` in the snapshot (sample-id order, 0-based). */
  offset: number;
  plan: Plan;
}

/** A page of the snapshot as `SnapshotKeys` reads it: planned for a resume, not for a new run. */
type SnapshotPage = Omit<PlannedPage, "plan"> & { plan?: Plan };

/**
 * The run's snapshot a page at a time, each page planned as a resume plans the whole run
 * (`planRun`): with its samples' attempts, read beside the pages in the same order
 * (`HeadCursor`), and its in-flight keys. What `SnapshotKeys` executes of a page, and its scorer
 * errors to score again (`toRescore`, `pagedRescoreUnits`).
 *
 * @example for await (const { plan } of plannedPages(store, run.id, 2, { inflight: [] })) plan.toRescore;
 */
export async function* plannedPages(
  store: Store,
  runId: string,
  epochs: number,
  resume: SnapshotResume,
  pageSize = 512,
): AsyncGenerator<PlannedPage> {
  const heads = new SortedCursor(store.reads.attemptHeadPages(runId));
  const reruns = new SortedCursor(store.reads.rerunPages(runId));
  const rerunErrors = resume.rerunErrors ?? true;
  let offset = 0;
  for await (const records of store.reads.samplePages(runId, pageSize)) {
    const ids = new Set(records.map((r) => r.sample.id));
    const rerun = await reruns.take(ids);
    const plan = planRun({
      snapshot: records,
      epochs,
      attempts: await heads.take(ids),
      inflight: resume.inflight.filter((k) => ids.has(k.sampleId)),
      ...(rerun.length === 0 ? {} : { rerun }),
      rerunErrors,
    });
    yield { records, offset, plan };
    offset += records.length;
  }
}

/**
 * Every key of a new run, read from its snapshot in the store a page at a time
 * (`reads.samplePages`, by sample id), epoch by epoch: what a run created from a dataset's
 * pages executes, so that no list of its keys or samples is held. Each key carries its sample's
 * record (`snapshotRecordOf`) and place (`snapshotIndexOf`). The next page is read while one is
 * executed; slots that use a page up before the next is in wait for that one read.
 *
 * With `resume`, the keys a resume of the run executes: each page's samples are planned with
 * their stored attempts (read beside the pages in the same order, `reads.attemptHeadPages`) by
 * `planRun`, as a resume plans the whole run, and only the keys it would execute are given, each
 * with the attempt it replays (`snapshotReplayOf`). Planning a page reads the store as it is
 * then: the resumer owns the run, so what it finds is what the claim found, but for its own
 * commits, of other keys (an earlier epoch's: planning a key looks at its own attempts only).
 *
 * @example const keys = new SnapshotKeys(store, run.id, 3); // then executeRun({ ..., keys })
 */
export class SnapshotKeys implements KeySource {
  readonly #store: Store;
  readonly #runId: string;
  readonly #epochs: number;
  readonly #pageSize: number;
  readonly #resume: SnapshotResume | undefined;
  readonly #pages: AsyncIterator<SnapshotEntry[]>;
  /** The next page, read while the one in hand is executed. */
  #ahead: Promise<IteratorResult<SnapshotEntry[]>> | undefined;
  #page: SnapshotEntry[] = [];
  #at = 0;
  #reading: Promise<boolean> | null = null;
  #ended = false;

  constructor(
    store: Store,
    runId: string,
    epochs: number,
    options: { pageSize?: number; resume?: SnapshotResume } = {},
  ) {
    this.#store = store;
    this.#runId = runId;
    this.#epochs = epochs;
    this.#pageSize = options.pageSize ?? 512;
    this.#resume = options.resume;
    this.#pages = this.#entryPages();
  }

  next(halted: () => boolean): Key | undefined | Promise<Key | undefined> {
    if (halted()) return undefined;
    // A key of the page in hand is given at once (no await): the engine's dispatch checks stay exact.
    if (this.#at < this.#page.length) return new SnapshotKey(this.#page[this.#at++]!);
    return this.#ended ? undefined : this.#afterRead(halted);
  }

  async done(): Promise<void> {}

  async #afterRead(halted: () => boolean): Promise<Key | undefined> {
    for (;;) {
      this.#reading ??= this.#read().finally(() => (this.#reading = null));
      const more = await this.#reading;
      if (halted()) return undefined;
      if (this.#at < this.#page.length) {
        return new SnapshotKey(this.#page[this.#at++]!);
      }
      if (!more) return undefined;
    }
  }

  /** Takes the next page of keys (read ahead), and reads the one after; false once none is left. */
  async #read(): Promise<boolean> {
    // Another slot's read may have filled the page already.
    if (this.#at < this.#page.length) return true;
    const next = await (this.#ahead ?? this.#pages.next());
    this.#ahead = undefined;
    if (next.done) {
      this.#ended = true;
      return false;
    }
    this.#page = next.value;
    this.#at = 0;
    // Read while this page executes; a failure is met by the read that awaits it.
    const ahead = this.#pages.next();
    ahead.catch(() => {});
    this.#ahead = ahead;
    return true;
  }

  /** Every page of keys to execute, epoch by epoch, each a page of the snapshot's (none empty). */
  async *#entryPages(): AsyncGenerator<SnapshotEntry[]> {
    for (let epoch = 1; epoch <= this.#epochs; epoch++) {
      for await (const page of this.#epochPages()) {
        const entries = epochEntries(page, epoch);
        if (entries.length > 0) yield entries;
      }
    }
  }

  /** The snapshot's pages, a resume's each planned with its own attempts (`plannedPages`). */
  async *#epochPages(): AsyncGenerator<SnapshotPage> {
    const { reads } = this.#store;
    if (this.#resume) {
      yield* plannedPages(this.#store, this.#runId, this.#epochs, this.#resume, this.#pageSize);
      return;
    }
    let offset = 0;
    for await (const records of reads.samplePages(this.#runId, this.#pageSize)) {
      yield { records, offset };
      offset += records.length;
    }
  }
}

/**
 * The keys of `epoch` a page executes, with their records, places and replays: every sample's
 * of a new run's page, those its plan lists of a resume's.
 */
function epochEntries({ records, offset, plan }: SnapshotPage, epoch: number): SnapshotEntry[] {
  if (!plan) return records.map((record, i) => ({ record, index: offset + i, epoch }));
  const entries: SnapshotEntry[] = [];
  for (const key of plan.toExecute) {
    if (key.epoch !== epoch) continue;
    const index = plan.toExecute.sampleIndexOf(key)!;
    const replayFrom = plan.replayFrom.get(keyString(key));
    const rerunAfter = plan.rerunAfter.get(keyString(key));
    entries.push({
      record: records[index]!,
      index: offset + index,
      epoch,
      ...(replayFrom === undefined ? {} : { replayFrom }),
      ...(rerunAfter === undefined ? {} : { rerunAfter }),
    });
  }
  return entries;
}

/**
 * Rows in the snapshot's order (sample id, then epoch and attempt: `reads.attemptHeadPages`' heads,
 * `reads.rerunPages`' requests), handed out a page of samples at a time: one read of them all in
 * order, where looking each page's samples up (`reads.sampleHeads`) cost a query a page (75 ms a
 * page of 512 on PostgreSQL). No ids are compared: the next rows are a page's while their sample
 * is one of its samples (every row's sample is in the snapshot, and the pages come in the same
 * order).
 */
class SortedCursor<Row extends { sampleId: string }> {
  readonly #pages: AsyncIterator<Row[]>;
  #buffer: Row[] = [];
  #at = 0;
  #ended = false;

  constructor(pages: AsyncIterable<Row[]>) {
    this.#pages = pages[Symbol.asyncIterator]();
  }

  /** The rows of the samples `ids` names, the page next in the snapshot's order. */
  async take(ids: ReadonlySet<string>): Promise<Row[]> {
    const taken: Row[] = [];
    for (;;) {
      if (this.#at === this.#buffer.length) {
        if (this.#ended) return taken;
        const next = await this.#pages.next();
        if (next.done) {
          this.#ended = true;
          return taken;
        }
        this.#buffer = next.value;
        this.#at = 0;
        continue;
      }
      const row = this.#buffer[this.#at]!;
      if (!ids.has(row.sampleId)) return taken;
      taken.push(row);
      this.#at++;
    }
  }
}
