import type { Key } from "./types.js";

/** A key as one string, for maps and sets. Sample ids may contain any character but NUL. */
export function keyString(key: Key): string {
  return `${key.sampleId}\u0000${key.epoch}`;
}

/** Binary (code unit) order of sample ids, then epoch: the one order exports and sums use. */
export function compareKeys(a: Key, b: Key): number {
  if (a.sampleId !== b.sampleId) return a.sampleId < b.sampleId ? -1 : 1;
  return a.epoch - b.epoch;
}
