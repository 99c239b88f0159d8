import type { Key, SampleRecord } from "./types.js";

/**
 * A key a `KeyList` made: a key's two fields, and its sample's index in the list's samples (with
 * the samples it indexes) in private fields, which no spread, `JSON.stringify` or `Object.keys`
 * sees (a draft or a journal read made from it carries the key alone).
 */
class ListedKey implements Key {
  readonly sampleId: string;
  readonly epoch: number;
  readonly #samples: readonly SampleRecord[];
  readonly #sampleIndex: number;

  constructor(samples: readonly SampleRecord[], sampleIndex: number, epoch: number) {
    this.sampleId = samples[sampleIndex]!.sample.id;
    this.epoch = epoch;
    this.#samples = samples;
    this.#sampleIndex = sampleIndex;
  }

  /** The index in `samples` a listed key of those samples carries; undefined for any other key. */
  static sampleIndexOf(key: Key, samples: readonly SampleRecord[]): number | undefined {
    if (!(#sampleIndex in key)) return undefined;
    const listed = key as ListedKey;
    return listed.#samples === samples ? listed.#sampleIndex : undefined;
  }
}

/**
 * A plan's keys, compact: per key one number (its sample's index in the plan's samples times the
 * epochs, plus its epoch less one) instead of an object, 8 bytes a key where a `Key[]` held ~48,
 * so a large run's plan is not a second copy of its sample ids. A key is made when it is read
 * (`at`, iteration), and carries which sample it is of (`sampleIndexOf`), so the engine finds
 * its record without a map of every sample id (nor a weak map of the keys made: ~0.5 µs a key).
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
    return new ListedKey(this.#samples, sampleIndex, (slot % this.#epochs) + 1);
  }

  /**
   * The index in the plan's samples of a key a list of the same samples made (this one, or one
   * it was filtered from); undefined for any other key.
   */
  sampleIndexOf(key: Key): number | undefined {
    return ListedKey.sampleIndexOf(key, this.#samples);
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
