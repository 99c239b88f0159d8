import { parseTree } from "jsonc-parser";
import { describe, expect, it } from "vitest";
import { locatePointer } from "./locate-pointer.js";

const text = `{
  "a": [10, {"b/c": true, "~d": null}],
  "e": {"f": "x", "f": "y"}
}`;

describe("locatePointer", () => {
  it.each([
    ["", { line: 1, column: 1 }],
    ["/a", { line: 2, column: 8 }],
    ["/a/0", { line: 2, column: 9 }],
    ["/a/1/b~1c", { line: 2, column: 21 }],
    ["/a/1/~0d", { line: 2, column: 33 }],
    // The last of repeated keys, the one JSON.parse keeps.
    ["/e/f", { line: 3, column: 24 }],
    // Missing: the nearest existing ancestor.
    ["/e/g", { line: 3, column: 8 }],
    ["/a/7", { line: 2, column: 8 }],
    ["/a/x", { line: 2, column: 8 }],
  ])("%j is at %j", (pointer, at) => {
    expect(locatePointer(parseTree(text), text, pointer)).toEqual(at);
  });

  it("is undefined without a tree", () => {
    expect(locatePointer(undefined, "", "/a")).toBeUndefined();
  });
});
