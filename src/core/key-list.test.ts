import { describe, expect, it } from "vitest";
import { KeyList } from "./key-list.js";
import type { SampleRecord } from "./types.js";

const samples: SampleRecord[] = ["a", "b", "c"].map((id) => ({
  sample: { id, input: id },
  fingerprint: `f-${id}`,
}));

describe("KeyList", () => {
  it("gives the keys pushed, in order, each knowing its sample, past its first capacity", () => {
    const keys = new KeyList(samples, 3, 1);
    keys.push(2, 1);
    keys.push(0, 3);
    keys.push(1, 2);
    expect(keys).toHaveLength(3);
    expect([...keys]).toEqual([
      { sampleId: "c", epoch: 1 },
      { sampleId: "a", epoch: 3 },
      { sampleId: "b", epoch: 2 },
    ]);
    const key = keys.at(1)!;
    expect(keys.sampleIndexOf(key)).toBe(0);
    // An equal key it did not make is not one of its own, nor one a list of other samples made.
    expect(keys.sampleIndexOf({ sampleId: "a", epoch: 3 })).toBeUndefined();
    const other = new KeyList([...samples], 3);
    other.push(0, 3);
    expect(keys.sampleIndexOf(other.at(0)!)).toBeUndefined();
    // What a spread or JSON makes of a key is the key alone.
    expect(Object.keys(key)).toEqual(["sampleId", "epoch"]);
    expect({ ...key }).toStrictEqual({ sampleId: "a", epoch: 3 });
    expect(JSON.stringify(key)).toBe('{"sampleId":"a","epoch":3}');
    expect(keys.at(3)).toBeUndefined();
    expect(keys.at(-1)).toBeUndefined();
    expect(JSON.parse(JSON.stringify(keys))).toEqual([...keys]);
  });

  it("filters into a new list and maps into an array", () => {
    const keys = new KeyList(samples, 1);
    for (let i = 0; i < samples.length; i++) keys.push(i, 1);
    const kept = keys.filter((k) => k.sampleId !== "b");
    expect(kept.map((k) => k.sampleId)).toEqual(["a", "c"]);
    expect(keys).toHaveLength(3);
    expect(keys.filter(() => false)).toHaveLength(0);
    expect(kept.sampleIndexOf(kept.at(1)!)).toBe(2);
  });
});
