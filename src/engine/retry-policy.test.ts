import { describe, expect, it } from "vitest";
import type { AttemptError } from "../core/types.js";
import { isFinal, retryVerdict, type RetryVerdict } from "./retry-policy.js";

const errors: Record<string, AttemptError | null> = {
  none: null,
  provider: { type: "provider", message: "HTTP 500", status: 500 },
  timeout: { type: "timeout", message: "timed out after 100 ms" },
  solver: { type: "solver", message: "boom" },
  scorer: { type: "scorer", scorer: "judge", message: "no GRADE line" },
};

describe("retryVerdict: error kind × attempt number × retries × a stop → verdict", () => {
  // [error kind, attempt index, retries, halted, verdict, final]
  it.each<[string, number, number, boolean, RetryVerdict, boolean]>([
    ["none", 0, 0, false, "scored", true],
    ["none", 2, 2, true, "scored", true],
    ["provider", 0, 0, false, "errored", true],
    ["provider", 0, 2, false, "retry", false],
    ["provider", 1, 2, false, "retry", false],
    ["provider", 2, 2, false, "errored", true],
    ["provider", 0, 2, true, "abandoned", true],
    ["provider", 2, 2, true, "errored", true],
    ["timeout", 0, 1, false, "retry", false],
    ["timeout", 1, 1, false, "errored", true],
    ["timeout", 0, 1, true, "abandoned", true],
    ["solver", 0, 3, false, "retry", false],
    ["solver", 3, 3, false, "errored", true],
    ["solver", 1, 3, true, "abandoned", true],
    ["scorer", 0, 0, false, "errored", true],
    ["scorer", 0, 2, false, "rescore", false],
    ["scorer", 1, 2, true, "rescore", false],
    ["scorer", 2, 2, true, "errored", true],
  ])(
    "%s error, attempt %i of retries %i, halted %s: %s",
    (kind, i, retries, halted, verdict, final) => {
      const error = errors[kind]!;
      const attempt = { status: error ? ("error" as const) : ("scored" as const), error };
      const got = retryVerdict(attempt, i, retries, () => halted);
      expect(got).toBe(verdict);
      expect(isFinal(got)).toBe(final);
    },
  );

  it("asks whether the execution halts only when the verdict hangs on it", () => {
    let asked = 0;
    const halted = () => {
      asked++;
      return false;
    };
    retryVerdict({ status: "scored", error: null }, 0, 2, halted);
    retryVerdict({ status: "error", error: errors.scorer! }, 0, 2, halted);
    retryVerdict({ status: "error", error: errors.provider! }, 2, 2, halted);
    expect(asked).toBe(0);
    retryVerdict({ status: "error", error: errors.provider! }, 0, 2, halted);
    expect(asked).toBe(1);
  });
});
