import { describe, expect, it } from "vitest";
import { selectOutcomes } from "./outcomes.js";

const a = (
  sampleId: string,
  epoch: number,
  attempt: number,
  status: "scored" | "error",
  fingerprint = "fp",
) => ({
  sampleId,
  epoch,
  attempt,
  status,
  fingerprint,
});

describe("selectOutcomes", () => {
  const attempts = [
    a("x", 1, 1, "error"),
    a("x", 1, 2, "scored"),
    a("x", 1, 3, "error"), // a later error does not replace a scored attempt
    a("x", 2, 1, "error"),
    a("x", 2, 2, "error"),
    a("y", 1, 1, "scored", "old"), // an attempt of an earlier version of the sample
    a("y", 1, 2, "error"),
  ];
  const fingerprints = new Map([
    ["x", "fp"],
    ["y", "fp"],
  ]);
  const expected = [a("x", 1, 2, "scored"), a("x", 2, 2, "error"), a("y", 1, 2, "error")];

  it("picks each key's latest scored attempt, else its latest error, for the current fingerprint", () => {
    expect(selectOutcomes(attempts, fingerprints)).toEqual(expected);
  });

  it("gives the same outcomes for attempts in any order", () => {
    const shuffled = [...attempts].reverse();
    const sortKey = (o: { sampleId: string; epoch: number }) => `${o.sampleId}#${o.epoch}`;
    expect(
      selectOutcomes(shuffled, fingerprints).sort((p, q) => sortKey(p).localeCompare(sortKey(q))),
    ).toEqual(expected);
  });
});
