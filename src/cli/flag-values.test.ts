import { InvalidArgumentError } from "commander";
import { describe, expect, it } from "vitest";
import { bounded } from "./flag-values.js";

const fraction = bounded("failUnder");
const concurrency = bounded("concurrency");
const epochs = bounded("epochs");
const port = bounded("port");
const milliseconds = bounded("cancelWaitMs");
const dollars = bounded("maxCost");

/** What `Number()` accepts and a flag must not: blank, hex, octal, binary, exponent, sign, spaces. */
const NOT_DECIMAL = [
  "",
  " ",
  "\t",
  "0x1",
  "0o1",
  "0b1",
  "1e3",
  "1e-1",
  "+1",
  " 1",
  "1 ",
  "1_000",
  "Infinity",
  "NaN",
  "1,5",
];

const refuses = (parse: (v: string) => number, value: string) =>
  expect(() => parse(value), JSON.stringify(value)).toThrow(InvalidArgumentError);

describe("flag values are plain decimal numbers", () => {
  it("fraction: 0 to 1 as written, nothing Number() would stretch", () => {
    expect(["0", "1", "0.5", ".5", "1.", "0.80", "1.0"].map(fraction)).toEqual([
      0, 1, 0.5, 0.5, 1, 0.8, 1,
    ]);
    for (const v of [...NOT_DECIMAL, "-0", "-0.1", "1.01", "2", "."]) refuses(fraction, v);
  });

  it("concurrency: 1 to 1000, epochs: 1 to 10000, and nothing else", () => {
    expect(["1", "16", "007", "1000"].map(concurrency)).toEqual([1, 16, 7, 1000]);
    for (const v of [...NOT_DECIMAL, "0", "-1", "1.5", "1.0", "1001", "10000000", "1000000000"]) {
      refuses(concurrency, v);
    }
    expect(["1", "10000"].map(epochs)).toEqual([1, 10000]);
    for (const v of ["0", "10001", "10000000", "9007199254740993"]) refuses(epochs, v);
  });

  it("an out-of-bound value is refused with the bound and why it is there", () => {
    expect(() => concurrency("1000000000")).toThrow(
      /^expected an integer from 1 to 1000 \(samples in flight at once; .+\)$/,
    );
    expect(() => epochs("10000000")).toThrow(/^expected an integer from 1 to 10000 \(/);
  });

  it("max-cost: dollars above 0, at most a billion", () => {
    expect(["0.5", "10", ".01", "1000000000"].map(dollars)).toEqual([0.5, 10, 0.01, 1e9]);
    for (const v of [...NOT_DECIMAL, "0", "0.0", "1000000000.5", "1e9"]) refuses(dollars, v);
  });

  it("port: 0 to 65535", () => {
    expect(["0", "80", "65535"].map(port)).toEqual([0, 80, 65535]);
    for (const v of [...NOT_DECIMAL, "-1", "65536", "80.0"]) refuses(port, v);
  });

  it("cancel's --wait: 0 ms to a day", () => {
    expect(["0", "1500", "86400000"].map(milliseconds)).toEqual([0, 1500, 86_400_000]);
    for (const v of [...NOT_DECIMAL, "-1", "1.5", "86400001"]) refuses(milliseconds, v);
  });
});
