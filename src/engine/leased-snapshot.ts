import { keyString } from "../core/keys.js";
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
 * move forward through the snapshot and the pages are read about once an epoch; a key behind the
 * page in hand (another epoch's, or a dead worker's lease taken over) reads the snapshot again
 * from its start. No ids are compared (the store's order is not JavaScript's): a page is read
 * until it holds the key's sample. One page of records is held.
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

  /** The sample's record and place: from the page in hand, the pages after it, or from the start. */
  async #find(sampleId: string): Promise<{ record: SampleRecord; index: number }> {
    for (let pass = 0; pass < 2; pass++) {
      for (;;) {
        const held = this.#held.get(sampleId);
        if (held) return held;
        if (!(await this.#next())) break;
      }
      // Behind the page in hand: read the snapshot again from its start.
      this.#pages = undefined;
      this.#read = 0;
    }
    throw new Error(`leased key of sample "${sampleId}" is not in run ${this.#runId}'s snapshot`);
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
    for (const record of next.value) {
      this.#held.set(record.sample.id, { record, index: this.#read++ });
    }
    return true;
  }
}
