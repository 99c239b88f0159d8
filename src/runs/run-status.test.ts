import { describe, expect, it } from "vitest";
import { restoredStatus, settledStatus, wasCutShort } from "./run-status.js";

describe("the status rule", () => {
  it.each([
    [0, false, "completed"],
    [0, true, "completed"],
    [3, true, "interrupted"],
    [3, false, "errored"],
  ] as const)("%i keys left, cut short: %s → %s", (remaining, cutShort, status) => {
    expect(settledStatus({ remaining, cutShort })).toBe(status);
  });

  it.each([
    ["running", true, "interrupted"],
    ["interrupted", true, "interrupted"],
    ["errored", false, "errored"],
    ["completed", false, "completed"],
  ] as const)("a %s run: cut short %s, restored as %s", (status, cutShort, restored) => {
    const run = { status } as Parameters<typeof wasCutShort>[0];
    expect(wasCutShort(run)).toBe(cutShort);
    expect(restoredStatus(run)).toBe(restored);
  });
});
