import { describe, expect, it } from "vitest";
import { thrownMessage } from "./errors.js";

describe("thrownMessage", () => {
  it.each([
    ["an Error", new Error("boom"), "boom"],
    ["a number", 42, "42"],
    ["null", null, "null"],
    [
      "an object without a prototype",
      Object.create(null) as unknown,
      "a thrown object that cannot be shown as text",
    ],
    [
      "an object whose toString throws",
      {
        toString: () => {
          throw new Error("no");
        },
      },
      "a thrown object that cannot be shown as text",
    ],
    [
      "an Error whose message getter throws",
      Object.defineProperty(new Error("x"), "message", {
        get: () => {
          throw new Error("no");
        },
      }),
      "a thrown object that cannot be shown as text",
    ],
  ])("describes %s without throwing", (_name, thrown, message) => {
    expect(thrownMessage(thrown)).toBe(message);
  });
});
