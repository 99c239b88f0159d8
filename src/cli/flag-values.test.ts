import { InvalidArgumentError } from "commander";
import { describe, expect, it } from "vitest";
import { fraction, milliseconds, port, positiveInt } from "./flag-values.js";

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

  it("positiveInt: 1, 2, … and nothing else", () => {
    expect(["1", "16", "007", "9007199254740991"].map(positiveInt)).toEqual([
      1, 16, 7, 9007199254740991,
    ]);
    for (const v of [...NOT_DECIMAL, "0", "-1", "1.5", "1.0", "9007199254740993"]) {
      refuses(positiveInt, v);
    }
  });

  it("port: 0 to 65535", () => {
    expect(["0", "80", "65535"].map(port)).toEqual([0, 80, 65535]);
    for (const v of [...NOT_DECIMAL, "-1", "65536", "80.0"]) refuses(port, v);
  });

  it("milliseconds: 0, 1, …", () => {
    expect(["0", "1500"].map(milliseconds)).toEqual([0, 1500]);
    for (const v of [...NOT_DECIMAL, "-1", "1.5"]) refuses(milliseconds, v);
  });
});
