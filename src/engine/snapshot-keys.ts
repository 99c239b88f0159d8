import { keyString } from "../core/keys.js";
import { planRun, type Plan } from "../core/plan.js";
import type { Key, SampleRecord } from "../core/types.js";
import type { Store } from "../store/types.js";
import type { KeySource } from "./lease-source.js";

/** A key of the snapshot to execute: its sample's record and place, and what it replays. */
interface SnapshotEntry {
  record: SampleRecord;
  /** The sample's place in the snapshot, in sample-id order (0-based). */
  index: number;
  epoch: number;
  /** The errored attempt whose journal its new attempt replays (see Plan.replayFrom). */
  replayFrom?: number;
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

/**
 * What `SnapshotKeys` plans each page with for a resume: the run's keys dispatched but never
 * committed (the run's in-flight marks, a few per slot). Absent: a new run, every key executes.
 */
export interface SnapshotResume {
  inflight: readonly Key[];
  /** Re-run keys whose latest attempt is an error (`PlanInput.rerunErrors`, default true). */
  rerunErrors?: boolean;
}

/**
 * A page of the run's snapshot planned as a resume plans the whole run (`planRun`), with the
 * page's samples' attempts (`reads.sampleHeads`, nothing of the other samples) and in-flight keys:
 * what `SnapshotKeys` executes of it, and its scorer errors to score again (`toRescore`).
 *
 * @example const plan = await planPage(store, run.id, records, 2, { inflight: [] });
 */
export async function planPage(
  store: Store,
  runId: string,
  records: SampleRecord[],
  epochs: number,
  resume: SnapshotResume,
): Promise<Plan> {
  const ids = new Set(records.map((r) => r.sample.id));
  const { heads } = await store.reads.sampleHeads(runId, ids);
  const inflight = resume.inflight.filter((k) => ids.has(k.sampleId));
  const rerunErrors = resume.rerunErrors ?? true;
  return planRun({ snapshot: records, epochs, attempts: heads, inflight, rerunErrors });
}

/**
 * Every key of a new run, read from its snapshot in the store a page at a time
 * (`reads.samplePages`, by sample id), epoch by epoch: what a run created from a dataset's
 * pages executes, so that no list of its keys or samples is held. Each key carries its sample's
 * record (`snapshotRecordOf`) and place (`snapshotIndexOf`). A page is read when the last one is
 * used up; slots asking meanwhile wait for that one read.
 *
 * With `resume`, the keys a resume of the run executes: each page's samples are planned with
 * their stored attempts (`reads.sampleHeads`, the page's only) by `planRun`, as a resume plans
 * the whole run, and only the keys it would execute are given, each with the attempt it replays
 * (`snapshotReplayOf`). Planning a page reads the store as it is then: the resumer owns the run,
 * so what it finds is what the claim found, but for its own commits, of other keys.
 *
 * @example const keys = new SnapshotKeys(store, run.id, 3); // then executeRun({ ..., keys })
 */
export class SnapshotKeys implements KeySource {
  readonly #store: Store;
  readonly #runId: string;
  readonly #epochs: number;
  readonly #pageSize: number;
  #epoch = 1;
  #pages: AsyncIterator<SampleRecord[]> | undefined;
  readonly #resume: SnapshotResume | undefined;
  #page: SnapshotEntry[] = [];
  #at = 0;
  /** The place of the next page's first sample in the snapshot. */
  #offset = 0;
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

  #epochPages(): AsyncIterator<SampleRecord[]> {
    const pages = this.#store.reads.samplePages(this.#runId, this.#pageSize);
    return pages[Symbol.asyncIterator]();
  }

  /** Reads the next page (of this epoch, or the first of the next); false once none is left. */
  async #read(): Promise<boolean> {
    // Another slot's read may have filled the page already.
    if (this.#at < this.#page.length) return true;
    for (;;) {
      this.#pages ??= this.#epochPages();
      const next = await this.#pages.next();
      if (!next.done) {
        const offset = this.#offset;
        this.#offset += next.value.length;
        this.#page = await this.#entries(next.value, offset);
        this.#at = 0;
        if (this.#page.length === 0) continue;
        return true;
      }
      this.#pages = undefined;
      this.#offset = 0;
      if (this.#epoch === this.#epochs) {
        this.#ended = true;
        return false;
      }
      this.#epoch++;
    }
  }

  /** The page's keys of this epoch to execute: all of them for a new run, a resume's plan's. */
  async #entries(records: SampleRecord[], offset: number): Promise<SnapshotEntry[]> {
    const epoch = this.#epoch;
    if (!this.#resume) return records.map((record, i) => ({ record, index: offset + i, epoch }));
    const plan = await planPage(this.#store, this.#runId, records, this.#epochs, this.#resume);
    const entries: SnapshotEntry[] = [];
    for (const key of plan.toExecute) {
      if (key.epoch !== epoch) continue;
      const index = plan.toExecute.sampleIndexOf(key)!;
      const replayFrom = plan.replayFrom.get(keyString(key));
      entries.push({
        record: records[index]!,
        index: offset + index,
        epoch,
        ...(replayFrom === undefined ? {} : { replayFrom }),
      });
    }
    return entries;
  }
}
