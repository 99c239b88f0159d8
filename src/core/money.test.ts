import { describe, expect, it } from "vitest";
import { formatUsd } from "./money.js";

describe("formatUsd", () => {
  it.each([
    [0, "$0.00"],
    [12.345, "$12.35"],
    [1, "$1.00"],
    [0.25, "$0.2500"],
    [0.0123, "$0.0123"],
    [0.0045, "$0.0045"],
    // Sub-cent amounts keep three significant digits instead of rounding to $0.0000.
    [0.00002, "$0.00002"],
    [0.0000234567, "$0.0000235"],
    [0.00012345, "$0.000123"],
    [1.5e-9, "$0.0000000015"],
    [1e-15, "$1.00e-15"],
    [-0.00003, "-$0.00003"],
  ])("%s → %s", (usd, text) => {
    expect(formatUsd(usd)).toBe(text);
  });
});
