import { describe, expect, it } from "vitest";
import { checkLabels, parseLabels } from "./labels.js";

describe("labels", () => {
  it.each<[string[], Record<string, string>]>([
    [["branch=main"], { branch: "main" }],
    [["b=2", "a=1"], { a: "1", b: "2" }],
    [["a=1,b=x=y"], { a: "1", b: "x=y" }],
    [["empty="], { empty: "" }],
    [["a=1", "a=1"], { a: "1" }],
    [
      ["github.run=https://github.com/a/b/actions/runs/1"],
      { "github.run": "https://github.com/a/b/actions/runs/1" },
    ],
  ])("parses %j", (items, labels) => {
    const parsed = parseLabels(items, "--label");
    expect(parsed).toEqual(labels);
    expect(Object.keys(parsed)).toEqual(Object.keys(labels).sort());
  });

  it.each<[string[], RegExp]>([
    [["nokey"], /--label "nokey": write it as key=value/],
    [["=v"], /label key "" must be/],
    [["-x=1"], /label key "-x" must be/],
    [["a=1", "a=2"], /a is given twice/],
    [[`v=${"x".repeat(513)}`], /513 characters, at most 512/],
    [["v=a\tb"], /control character/],
  ])("refuses %j naming the problem", (items, message) => {
    expect(() => parseLabels(items, "--label")).toThrow(message);
  });

  it("refuses more than 64 labels", () => {
    const many = Object.fromEntries(Array.from({ length: 65 }, (_, i) => [`k${i}`, "v"]));
    expect(() => checkLabels(many, "labels")).toThrow(/65 labels, at most 64/);
  });
});
