import { describe, expect, it } from "vitest";
import { arePlainScores, scoresSchema } from "./checks.js";

describe("scores checked without zod", () => {
  it.each([
    [
      "plain scores",
      [
        { scorer: "exact", value: 1 },
        { scorer: "includes", value: 0 },
      ],
      true,
    ],
    ["no scores", [], true],
    [
      "every field",
      [{ scorer: "j", value: 0.5, answer: "a", explanation: "e", metadata: { k: [1, null] } }],
      true,
    ],
    ["a skipped score", [{ scorer: "j", value: null, skipped: "no target" }], true],
    ["an error score", [{ scorer: "j", value: null, error: "threw" }], true],
    ["a value above 1", [{ scorer: "j", value: 1.5 }], false],
    ["a NaN value", [{ scorer: "j", value: NaN }], false],
    ["a value missing", [{ scorer: "j" }], false],
    ["a scorer not a string", [{ scorer: 1, value: 1 }], false],
    ["an answer not a string", [{ scorer: "j", value: 1, answer: 4 }], false],
    ["metadata an array", [{ scorer: "j", value: 1, metadata: [1] }], false],
    [
      "metadata with an undefined member",
      [{ scorer: "j", value: 1, metadata: { a: undefined } }],
      false,
    ],
    ["metadata with a BigInt", [{ scorer: "j", value: 1, metadata: { a: 1n } }], false],
    ["not an array", { scorer: "j", value: 1 }, false],
    ["a null score", [null], false],
  ])("%s: agrees with the schema", (_what, scores, plain) => {
    expect(arePlainScores(scores)).toBe(plain);
    // What the fast path accepts, the schema accepts; what it refuses goes to the schema.
    if (plain) expect(scoresSchema.safeParse(scores).success).toBe(true);
  });
});
