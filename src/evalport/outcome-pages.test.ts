import { describe, expect, it } from "vitest";
import { byteOrder } from "./outcome-pages.js";

describe("byteOrder", () => {
  it.each([
    ["a", "b", -1],
    ["B", "a", -1],
    ["a9", "a10", 1],
    ["a", "ab", -1],
    ["é", "z", 1],
    ["same", "same", 0],
    // Where UTF-16 and UTF-8 disagree: U+FFFD sorts before U+1F600 by code point (and by the
    // stores' bytes), though its UTF-16 unit is above the emoji's surrogates.
    ["\uFFFD", "\u{1F600}", -1],
    ["\uE000", "\u{10000}", -1],
    ["\u{1F600}", "\u{1F601}", -1],
    ["\uD7FF", "\u{10000}", -1],
  ])("%j against %j is %i", (a, b, sign) => {
    expect(Math.sign(byteOrder(a, b))).toBe(sign);
    expect(Math.sign(byteOrder(b, a))).toBe(-sign || 0);
    expect(Math.sign(byteOrder(a, b))).toBe(
      Math.sign(Buffer.compare(Buffer.from(a), Buffer.from(b))),
    );
  });
});
