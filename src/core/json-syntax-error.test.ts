import { describe, expect, it } from "vitest";
import { MAX_DOCUMENT_DEPTH } from "./json.js";
import { findJsonSyntaxError } from "./json-syntax-error.js";

describe("findJsonSyntaxError", () => {
  it.each([
    '{"a":[1,2.5e-3,{"b":"\\u00e9\\n"}],"c":true,"d":false,"e":null}',
    " [ ] ",
    '"x"',
    "-0",
  ])("agrees with JSON.parse that %s is valid", (text) => {
    expect(() => JSON.parse(text) as unknown).not.toThrow();
    expect(findJsonSyntaxError(text)).toBeUndefined();
  });
});

describe("findJsonSyntaxError's depth bound", () => {
  it("stops at the first bracket past maxDepth, before a syntax error further on", () => {
    expect(findJsonSyntaxError(`${"[".repeat(200_000)}x`, 3)).toEqual({
      offset: 3,
      message: "nesting too deep: more than 3 levels of arrays and objects",
      tooDeep: true,
    });
    expect(findJsonSyntaxError(`[[[x${"[".repeat(5)}`, 3)).toMatchObject({
      offset: 3,
      tooDeep: false,
    });
  });

  it("counts levels, not brackets: siblings do not add up", () => {
    expect(findJsonSyntaxError(`[${"[],".repeat(10_000)}x]`, 2)).toMatchObject({
      offset: 1 + 3 * 10_000,
      tooDeep: false,
    });
  });

  it("is bounded by MAX_DOCUMENT_DEPTH by default", () => {
    expect(findJsonSyntaxError("[".repeat(100_000))).toMatchObject({
      offset: MAX_DOCUMENT_DEPTH,
      tooDeep: true,
    });
  });
});
