import type { Key, SampleRecord } from "./types.js";

/**
 * A plan's keys, compact: per key one number (its sample's index in the plan's samples times the
 * epochs, plus its epoch less one) instead of an object, 8 bytes a key where a `Key[]` held ~48,
 * so a large run's plan is not a second copy of its sample ids. A key is made when it is read
 * (`at`, iteration), and remembers which sample it is of (`sampleIndexOf`), so the engine finds
 * its record without a map of every sample id.
 *
 * @example
 * const keys = new KeyList(samples, 2);
 * keys.push(0, 1);
 * keys.at(0); // { sampleId: samples[0].sample.id, epoch: 1 }
 */
export class KeyList implements Iterable<Key> {
  readonly #samples: readonly SampleRecord[];
  readonly #epochs: number;
  #slots: Float64Array;
  #length = 0;
  // The keys made from this list, with their sample's index: a key lives as long as its holder.
  readonly #made = new WeakMap<Key, number>();

  constructor(samples: readonly SampleRecord[], epochs: number, capacity = 16) {
    this.#samples = samples;
    this.#epochs = epochs;
    this.#slots = new Float64Array(Math.max(capacity, 1));
  }

  get length(): number {
    return this.#length;
  }

  /** Appends the key of `samples[sampleIndex]` in `epoch` (1-based). */
  push(sampleIndex: number, epoch: number): void {
    if (this.#length === this.#slots.length) {
      const grown = new Float64Array(this.#slots.length * 2);
      grown.set(this.#slots);
      this.#slots = grown;
    }
    this.#slots[this.#length++] = sampleIndex * this.#epochs + epoch - 1;
  }

  /** The `i`th key, a new object each time; undefined past the end. */
  at(i: number): Key | undefined {
    if (i < 0 || i >= this.#length) return undefined;
    const slot = this.#slots[i]!;
    const sampleIndex = Math.floor(slot / this.#epochs);
    const key = {
      sampleId: this.#samples[sampleIndex]!.sample.id,
      epoch: (slot % this.#epochs) + 1,
    };
    this.#made.set(key, sampleIndex);
    return key;
  }

  /** The index in the plan's samples of a key this list made; undefined for any other object. */
  sampleIndexOf(key: Key): number | undefined {
    return this.#made.get(key);
  }

  /** The keys `keep` accepts, in order, as a new list. */
  filter(keep: (key: Key) => boolean): KeyList {
    const kept = new KeyList(this.#samples, this.#epochs, this.#length);
    for (let i = 0; i < this.#length; i++) {
      const slot = this.#slots[i]!;
      if (keep(this.at(i)!)) kept.#slots[kept.#length++] = slot;
    }
    return kept;
  }

  /** The keys mapped, as an array. */
  map<T>(fn: (key: Key) => T): T[] {
    const out: T[] = [];
    for (const key of this) out.push(fn(key));
    return out;
  }

  *[Symbol.iterator](): IterableIterator<Key> {
    for (let i = 0; i < this.#length; i++) yield this.at(i)!;
  }

  /** As JSON, the keys themselves (what a `Key[]` gave). */
  toJSON(): Key[] {
    return [...this];
  }
}
