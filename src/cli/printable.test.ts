import { describe, expect, it } from "vitest";
import { printable } from "./printable.js";

describe("printable", () => {
  it.each([
    ["an ANSI escape", 'id "r_\u001b[2J"', 'id "r_\\u001b[2J"'],
    ["a terminal title and a bell", "\u001b]0;pwned\u0007", "\\u001b]0;pwned\\u0007"],
    ["NUL and DEL", "a\u0000b\u007f", "a\\u0000b\\u007f"],
    ["a C1 control (CSI)", "x\u009b2J", "x\\u009b2J"],
    ["a carriage return", "ok\rfake", "ok\\u000dfake"],
  ])("escapes %s", (_name, text, shown) => {
    expect(printable(text)).toBe(shown);
  });

  it("keeps newlines, tabs and any other character", () => {
    const text = "line 1\n\tline 2 · café ✓ \u202e";
    expect(printable(text)).toBe(text);
  });
});
