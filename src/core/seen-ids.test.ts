import { describe, expect, it } from "vitest";
import { SeenIds } from "./seen-ids.js";

describe("SeenIds", () => {
  it("says every repeat, and few false repeats at the size asked for", () => {
    const n = 100_000;
    const seen = new SeenIds(n);
    let falseRepeats = 0;
    for (let i = 0; i < n; i++) if (seen.add(`s${i}`)) falseRepeats++;
    for (let i = 0; i < n; i += 997) expect(seen.add(`s${i}`)).toBe(true);
    expect(seen.add("")).toBe(false);
    expect(seen.add("")).toBe(true);
    expect(falseRepeats / n).toBeLessThan(0.01);
  });

  it("tells ids apart that differ in one character or in length", () => {
    const seen = new SeenIds(10);
    expect(["ab", "ba", "a", "abc", "é", "e"].map((id) => seen.add(id))).toEqual([
      false,
      false,
      false,
      false,
      false,
      false,
    ]);
  });
});
