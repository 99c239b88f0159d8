import type { Key } from "../core/types.js";
import type { Store } from "../store/types.js";

/**
 * A run's snapshot fingerprints read a page at a time beside its attempts, which come in the
 * same sample-id order (`reads.attemptHeadPages`): what a report folds a run with when it holds
 * no list of the samples. Before a page of attempts is folded, `hold` reads fingerprint pages
 * until each of the page's samples is held; after it, `release` lets go of those before its last
 * sample. No ids are compared (the store's order is not JavaScript's): the window moves by the
 * ids the attempts name, every one of which the snapshot has.
 *
 * @example
 * const window = new SnapshotWindow(store, run.id);
 * for await (const page of store.reads.attemptHeadPages(run.id)) {
 *   await window.hold(page); // then window.fingerprintOf(id), window.indexOf(id)
 *   window.release(page);
 * }
 */
export class SnapshotWindow {
  readonly #store: Store;
  readonly #runId: string;
  readonly #pageSize: number;
  #pages: AsyncIterator<{ sampleId: string; fingerprint: string }[]> | undefined;
  #ended = false;
  /** Held samples, in snapshot order: their fingerprint and place (0-based, sample-id order). */
  readonly #held = new Map<string, { fingerprint: string; index: number }>();
  #read = 0;

  constructor(store: Store, runId: string, pageSize = 10_000) {
    this.#store = store;
    this.#runId = runId;
    this.#pageSize = pageSize;
  }

  /** Reads the snapshot on until every sample `keys` name is held (or the snapshot ends). */
  async hold(keys: readonly Key[]): Promise<void> {
    for (const { sampleId } of keys) {
      while (!this.#held.has(sampleId) && !this.#ended) await this.#next();
    }
  }

  /** Lets go of the held samples before the last one `keys` name (kept: its next attempts may follow). */
  release(keys: readonly Key[]): void {
    const last = keys.at(-1)?.sampleId;
    if (last === undefined || !this.#held.has(last)) return;
    for (const id of this.#held.keys()) {
      if (id === last) break;
      this.#held.delete(id);
    }
  }

  readonly fingerprintOf = (sampleId: string): string | undefined =>
    this.#held.get(sampleId)?.fingerprint;

  readonly indexOf = (sampleId: string): number | undefined => this.#held.get(sampleId)?.index;

  async #next(): Promise<void> {
    if (!this.#pages) {
      const pages = this.#store.reads.sampleFingerprintPages(this.#runId, this.#pageSize);
      this.#pages = pages[Symbol.asyncIterator]();
    }
    const next = await this.#pages.next();
    if (next.done) {
      this.#ended = true;
      return;
    }
    for (const { sampleId, fingerprint } of next.value) {
      this.#held.set(sampleId, { fingerprint, index: this.#read++ });
    }
  }
}
