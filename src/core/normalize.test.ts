import { describe, expect, it } from "vitest";
import { MAX_JSON_DEPTH } from "./json.js";
import { normalizeSolverReturn } from "./normalize.js";

/** An array nested `levels` levels deep (the outermost array is level 1). */
function nested(levels: number): unknown {
  let value: unknown = 1;
  for (let i = 0; i < levels; i += 1) value = [value];
  return value;
}

describe("normalizeSolverReturn", () => {
  it("wraps a bare JSON value and passes a result through", () => {
    expect(normalizeSolverReturn("42")).toEqual({ output: "42" });
    expect(
      normalizeSolverReturn({ output: [1], usage: { inputTokens: 3, outputTokens: 1 } }),
    ).toEqual({
      output: [1],
      usage: { inputTokens: 3, outputTokens: 1 },
    });
    expect(normalizeSolverReturn(nested(MAX_JSON_DEPTH) as never)).toEqual({
      output: nested(MAX_JSON_DEPTH),
    });
  });

  it("gives what the schema gives: members it does not know dropped, usage beyond tokens parsed", () => {
    const usage = { inputTokens: 3, outputTokens: 1 };
    expect(normalizeSolverReturn({ output: "a", usage, retries: 2 })).toStrictEqual({
      output: "a",
      usage,
      retries: 2,
    });
    expect(normalizeSolverReturn({ output: "a", extra: 1 } as never)).toStrictEqual({
      output: "a",
    });
    expect(
      normalizeSolverReturn({ output: "a", usage: { ...usage, note: "x" } } as never),
    ).toStrictEqual({ output: "a", usage });
    expect(() => normalizeSolverReturn({ output: "a", retries: -1 })).toThrow(
      "solver returned an invalid result",
    );
  });

  it.each([
    ["a BigInt", 10n, "solver output is not JSON-serialisable: a BigInt (10n) is not JSON"],
    [
      "a BigInt inside",
      { answer: { n: 10n } },
      "solver output is not JSON-serialisable: output.answer.n: a BigInt (10n) is not JSON",
    ],
    ["undefined", undefined, "solver output is not JSON-serialisable: undefined is not JSON"],
    [
      "a value nested too deep",
      nested(MAX_JSON_DEPTH + 1),
      `solver output is not JSON-serialisable: nesting too deep: more than ${MAX_JSON_DEPTH} levels`,
    ],
    [
      "a value nested far too deep for the stack",
      nested(200_000),
      "solver output is not JSON-serialisable: nesting too deep",
    ],
  ])("refuses %s, saying why", (_, value, message) => {
    expect(() => normalizeSolverReturn(value as never)).toThrow(message);
  });

  it("refuses a circular output, naming the member that refers back", () => {
    const output: Record<string, unknown> = { a: { list: [1] } };
    (output.a as { list: unknown[] }).list.push(output);
    expect(() => normalizeSolverReturn(output as never)).toThrow(
      "solver output is not JSON-serialisable: output.a.list.1: a circular reference to an enclosing value is not JSON",
    );
  });

  it("names the field of a { output, transcript } result that is not JSON", () => {
    const transcript: unknown[] = [];
    transcript.push(transcript);
    expect(() => normalizeSolverReturn({ output: "x", transcript } as never)).toThrow(
      "solver transcript is not JSON-serialisable: transcript.0: a circular reference",
    );
    expect(() => normalizeSolverReturn({ output: { n: 1n } } as never)).toThrow(
      "solver output is not JSON-serialisable: output.n: a BigInt (1n) is not JSON",
    );
  });
});
