import type { Key, SampleRecord } from "../core/types.js";
import type { Store } from "../store/types.js";
import type { KeySource } from "./lease-source.js";

/**
 * A key read from the run's snapshot: its two fields, and its sample's record in a private
 * field, which no spread, `JSON.stringify` or `Object.keys` sees (a draft made from it carries
 * the key alone).
 */
class SnapshotKey implements Key {
  readonly sampleId: string;
  readonly epoch: number;
  readonly #record: SampleRecord;

  constructor(record: SampleRecord, epoch: number) {
    this.sampleId = record.sample.id;
    this.epoch = epoch;
    this.#record = record;
  }

  static recordOf(key: Key): SampleRecord | undefined {
    return #record in key ? (key as SnapshotKey).#record : undefined;
  }
}

/** The record a key of `SnapshotKeys` carries; undefined for any other key. */
export function snapshotRecordOf(key: Key): SampleRecord | undefined {
  return SnapshotKey.recordOf(key);
}

/**
 * Every key of a new run, read from its snapshot in the store a page at a time
 * (`reads.samplePages`, by sample id), epoch by epoch: what a run created from a dataset's
 * pages executes, so that no list of its keys or samples is held. Each key carries its sample's
 * record (`snapshotRecordOf`). A page is read when the last one is used up; slots asking
 * meanwhile wait for that one read.
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
  #page: SampleRecord[] = [];
  #at = 0;
  #reading: Promise<boolean> | null = null;
  #ended = false;

  constructor(store: Store, runId: string, epochs: number, pageSize = 512) {
    this.#store = store;
    this.#runId = runId;
    this.#epochs = epochs;
    this.#pageSize = pageSize;
  }

  next(halted: () => boolean): Key | undefined | Promise<Key | undefined> {
    if (halted()) return undefined;
    // A key of the page in hand is given at once (no await): the engine's dispatch checks stay exact.
    if (this.#at < this.#page.length) return new SnapshotKey(this.#page[this.#at++]!, this.#epoch);
    return this.#ended ? undefined : this.#afterRead(halted);
  }

  async done(): Promise<void> {}

  async #afterRead(halted: () => boolean): Promise<Key | undefined> {
    for (;;) {
      this.#reading ??= this.#read().finally(() => (this.#reading = null));
      const more = await this.#reading;
      if (halted()) return undefined;
      if (this.#at < this.#page.length) {
        return new SnapshotKey(this.#page[this.#at++]!, this.#epoch);
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
        if (next.value.length === 0) continue;
        this.#page = next.value;
        this.#at = 0;
        return true;
      }
      this.#pages = undefined;
      if (this.#epoch === this.#epochs) {
        this.#ended = true;
        return false;
      }
      this.#epoch++;
    }
  }
}
