import { byteOrder, keyString } from "../core/keys.js";
import { planRun } from "../core/plan.js";
import type { Key, SampleRecord } from "../core/types.js";
import type { Store } from "../store/types.js";
import { snapshotKey } from "./snapshot-keys.js";

/**
 * A distributed run's leased keys found in its snapshot, for a worker that holds no list of the
 * run's samples: each claimed key is given its sample's record and place (`snapshotRecordOf`,
 * `snapshotIndexOf`) and the errored attempt whose journal it replays (`snapshotReplayOf`, as a
 * plan of the whole run would: `planRun` over the batch's samples and their stored attempts).
 *
 * The snapshot is read a page at a time (`reads.samplePages`, sample-id order) as the claims come.
 * A claim hands out the run's open keys epoch by epoch in that same order, so one worker's claims
 * move forward through the snapshot and the pages are read about once an epoch; for a key behind
 * the page in hand (another epoch's, or a dead worker's lease taken over) the pages start again
 * at its sample (`reads.samplePlace`: its place and the id before it), not at the snapshot's
 * start. Ids are compared as the stores order them (UTF-8 bytes, `byteOrder`). One page of
 * records is held.
 *
 * @example const keys = await new LeasedSnapshot(store, run.id, run.config.epochs).locate(claimed);
 */
export class LeasedSnapshot {
  readonly #store: Store;
  readonly #runId: string;
  readonly #epochs: number;
  readonly #pageSize: number;
  #pages: AsyncIterator<SampleRecord[]> | undefined;
  /** The page in hand: its samples' records and places (0-based, sample-id order). */
  #held = new Map<string, { record: SampleRecord; index: number }>();
  /** The first sample id of the page in hand (undefined before the first page). */
  #first: string | undefined;
  #read = 0;

  constructor(store: Store, runId: string, epochs: number, pageSize = 512) {
    this.#store = store;
    this.#runId = runId;
    this.#epochs = epochs;
    this.#pageSize = pageSize;
  }

  /** The keys as keys that carry their records, places and replays, in the same order. */
  readonly locate = async (keys: readonly Key[]): Promise<Key[]> => {
    if (keys.length === 0) return [];
    const found = new Map<string, { record: SampleRecord; index: number }>();
    for (const { sampleId } of keys) {
      if (!found.has(sampleId)) found.set(sampleId, await this.#find(sampleId));
    }
    const records = [...found.values()].map((f) => f.record);
    const { heads } = await this.#store.reads.sampleHeads(this.#runId, found.keys());
    const { replayFrom } = planRun({
      snapshot: records,
      epochs: this.#epochs,
      attempts: heads,
      inflight: [],
    });
    return keys.map((key) => {
      const { record, index } = found.get(key.sampleId)!;
      const replay = replayFrom.get(keyString(key));
      return snapshotKey({
        record,
        index,
        epoch: key.epoch,
        ...(replay === undefined ? {} : { replayFrom: replay }),
      });
    });
  };

  /** The sample's record and place: from the page in hand, the pages after it, or from its own. */
  async #find(sampleId: string): Promise<{ record: SampleRecord; index: number }> {
    if (!this.#held.has(sampleId) && this.#first !== undefined) {
      if (byteOrder(sampleId, this.#first) < 0) await this.#seek(sampleId);
    }
    for (;;) {
      const held = this.#held.get(sampleId);
      if (held) return held;
      if (!(await this.#next())) break;
    }
    throw this.#missing(sampleId);
  }

  /** The pages from `sampleId`'s own on (a key behind the page in hand). */
  async #seek(sampleId: string): Promise<void> {
    const place = await this.#store.reads.samplePlace(this.#runId, sampleId);
    if (!place) throw this.#missing(sampleId);
    const start = { afterSampleId: place.afterSampleId };
    const pages = this.#store.reads.samplePages(this.#runId, this.#pageSize, start);
    this.#pages = pages[Symbol.asyncIterator]();
    this.#read = place.index;
    this.#held = new Map();
    this.#first = undefined;
  }

  #missing(sampleId: string): Error {
    return new Error(`leased key of sample "${sampleId}" is not in run ${this.#runId}'s snapshot`);
  }

  /** Reads the next page into hand; false at the snapshot's end. */
  async #next(): Promise<boolean> {
    if (!this.#pages) {
      const pages = this.#store.reads.samplePages(this.#runId, this.#pageSize);
      this.#pages = pages[Symbol.asyncIterator]();
    }
    const next = await this.#pages.next();
    if (next.done) return false;
    this.#held = new Map();
    this.#first = next.value[0]?.sample.id;
    for (const record of next.value) {
      this.#held.set(record.sample.id, { record, index: this.#read++ });
    }
    return true;
  }
}
