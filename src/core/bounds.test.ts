import { describe, expect, it } from "vitest";
import { BOUNDS, boundProblem, checkBound, describeBound, parseBounded } from "./bounds.js";

describe("bounds", () => {
  it.each([
    ["concurrency", 1, true],
    ["concurrency", 1_000, true],
    ["concurrency", 0, false],
    ["concurrency", 1_001, false],
    ["concurrency", 1e7, false],
    ["concurrency", 1e9, false],
    ["concurrency", 1.5, false],
    ["epochs", 10_000, true],
    ["epochs", 1e7, false],
    ["retries", 0, true],
    ["retries", 101, false],
    ["maxCost", 0.01, true],
    ["maxCost", 0, false],
    ["maxCost", 1e9, true],
    ["maxCost", 1e9 + 1, false],
    ["failUnder", 0, true],
    ["failUnder", 1, true],
    ["failUnder", 1.01, false],
    ["timeoutMs", 86_400_000, true],
    ["timeoutMs", 2 ** 31, false],
    ["port", 0, true],
    ["port", 65_536, false],
    ["limit", Number.NaN, false],
    ["limit", Number.POSITIVE_INFINITY, false],
  ] as const)("%s = %d is in bounds: %s", (name, value, fits) => {
    expect(boundProblem(name, value) === undefined).toBe(fits);
  });

  it("names the range, the value and why the bound is there", () => {
    expect(boundProblem("concurrency", 1e9)).toBe(
      `expected an integer from 1 to 1000, got 1000000000 (${BOUNDS.concurrency.why})`,
    );
    expect(describeBound("maxCost")).toBe("a number of US dollars above 0, at most 1000000000");
    expect(describeBound("timeoutMs")).toBe("an integer from 1 to 86400000 ms");
  });

  it("checkBound throws the given code naming the input", () => {
    expect(checkBound("epochs", 3, "--epochs")).toBe(3);
    expect(() => checkBound("epochs", 1e7, "epochs", "E_CONFIG")).toThrow(
      expect.objectContaining({
        code: "E_CONFIG",
        message: expect.stringMatching(
          /^epochs: expected an integer from 1 to 10000, got 10000000/,
        ),
      }),
    );
  });

  it.each([
    ["concurrency", "16", 16],
    ["concurrency", "007", 7],
    ["concurrency", "1e3", undefined],
    ["concurrency", "1000000000", undefined],
    ["concurrency", " 8", undefined],
    ["concurrency", "0x10", undefined],
    ["maxCost", "0.5", 0.5],
    ["maxCost", ".5", 0.5],
    ["maxCost", "-1", undefined],
    ["staleMs", "999", undefined],
    ["staleMs", "1000", 1000],
    ["leaseMs", "99", undefined],
    ["leaseMs", "86400001", undefined],
  ] as const)("parseBounded(%s, %j) is %j", (name, text, expected) => {
    expect(parseBounded(name, text)).toBe(expected);
  });

  it("every bound is a real range with a reason", () => {
    for (const [name, bound] of Object.entries(BOUNDS)) {
      expect(bound.min, name).toBeLessThan(bound.max);
      expect(bound.why.length, name).toBeGreaterThan(10);
    }
  });
});
