/**
 * Which ids a stream has given, as a Bloom filter: `add` says whether the id may have come before
 * (true for every repeat, and for a few ids that did not: at the size asked for, under 1 % of
 * them) or certainly did not (false). What tells a file that repeats an id while it is read a page
 * at a time, in about 10 bits an id instead of a set of every id: a true answer is checked by
 * whatever can afford to (a paged resume loads the file whole, which names both rows).
 *
 * @example const seen = new SeenIds(1_000); seen.add("a"); // false; seen.add("a"); // true
 */
export class SeenIds {
  readonly #bits: Uint32Array;
  readonly #mask: number;

  /** `expected`: how many ids the stream is likely to give (more only raise the false answers). */
  constructor(expected: number) {
    let size = 1 << 16;
    while (size < expected * 10) size *= 2;
    this.#bits = new Uint32Array(size / 32);
    this.#mask = size - 1;
  }

  add(id: string): boolean {
    // Two FNV-1a hashes of the UTF-16 code units; seven probes by double hashing.
    let h1 = 0x811c9dc5;
    let h2 = 0x01000193 ^ id.length;
    for (let i = 0; i < id.length; i++) {
      const c = id.charCodeAt(i);
      h1 = Math.imul(h1 ^ c, 0x01000193);
      h2 = Math.imul(h2 ^ c, 0x5bd1e995);
    }
    h2 = (h2 ^ (h2 >>> 15)) | 1;
    let seen = true;
    for (let k = 0; k < PROBES; k++) {
      const bit = (h1 + Math.imul(k, h2)) & this.#mask;
      const word = bit >>> 5;
      const flag = 1 << (bit & 31);
      if ((this.#bits[word]! & flag) === 0) {
        seen = false;
        this.#bits[word]! |= flag;
      }
    }
    return seen;
  }
}

const PROBES = 7;
