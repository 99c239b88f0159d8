import { describe, expect, it } from "vitest";
import { isPartial, partialFlagErrors } from "./is-partial.js";

describe("isPartial", () => {
  it.each([
    ["nested true", { metadata: { openeval: { partial: true } } }, true],
    ["dotted true", { metadata: { "openeval.partial": true } }, true],
    ["nested false", { metadata: { openeval: { partial: false } } }, false],
    ["dotted false", { metadata: { "openeval.partial": false } }, false],
    [
      "either spelling true wins",
      { metadata: { openeval: { partial: false }, "openeval.partial": true } },
      true,
    ],
    ["no flag", { metadata: { openeval: { cost: 1 } } }, false],
    ["no metadata", { results: [] }, false],
    ["a string is not true", { metadata: { "openeval.partial": "true" } }, false],
    ["not an object", "partial", false],
  ])("%s", (_name, doc, expected) => expect(isPartial(doc)).toBe(expected));
});

describe("partialFlagErrors", () => {
  it("accepts one boolean flag, or both spellings agreeing", () => {
    expect(partialFlagErrors({ metadata: { openeval: { partial: true } } })).toEqual([]);
    expect(
      partialFlagErrors({ metadata: { openeval: { partial: true }, "openeval.partial": true } }),
    ).toEqual([]);
  });

  it("rejects a non-boolean flag at its path", () => {
    expect(partialFlagErrors({ metadata: { "openeval.partial": "yes" } })).toMatchObject([
      { path: "/metadata/openeval.partial", code: "resultset.partial_not_boolean" },
    ]);
  });

  it("rejects the two spellings disagreeing", () => {
    expect(
      partialFlagErrors({ metadata: { openeval: { partial: false }, "openeval.partial": true } }),
    ).toMatchObject([{ path: "/metadata/openeval.partial", code: "resultset.partial_conflict" }]);
  });
});
