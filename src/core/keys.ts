import type { Key } from "./types.js";

/** A key as one string, for maps and sets. Sample ids may contain any character but NUL. */
export function keyString(key: Key): string {
  return `${key.sampleId}\u0000${key.epoch}`;
}

/**
 * Key order: sample ids in UTF-8 byte order (`byteOrder`, the order both stores read them in),
 * then epoch: the one order exports, folds and sums use.
 */
export function compareKeys(a: Key, b: Key): number {
  if (a.sampleId !== b.sampleId) return byteOrder(a.sampleId, b.sampleId);
  return a.epoch - b.epoch;
}

/**
 * Compares two strings by their UTF-8 bytes (code points), the order both stores sort sample ids
 * in. JavaScript's `<` compares UTF-16 code units: the two differ only where a character above
 * U+FFFF meets one in U+E000–U+FFFF.
 */
export function byteOrder(a: string, b: string): number {
  if (a === b) return 0;
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const x = a.charCodeAt(i);
    const y = b.charCodeAt(i);
    if (x !== y) return codePointRank(x) - codePointRank(y);
  }
  return a.length - b.length;
}

/** A UTF-16 unit's rank in code point order: surrogates (astral characters) after U+FFFF. */
const codePointRank = (unit: number) =>
  unit >= 0xe000 ? unit - 0x800 : unit >= 0xd800 ? unit + 0x2000 : unit;
