import { describe, expect, it } from "vitest";
import type { Attempt, AttemptError } from "../core/types.js";
import { MISCONFIGURED_AFTER_SAMPLES, watchMisconfiguration } from "./misconfiguration.js";

type Seen = Pick<Attempt, "sampleId" | "status" | "error">;

const URL = "http://127.0.0.1:9/v1/chat/completions";
const unauthorized: AttemptError = {
  type: "provider",
  message: `POST ${URL} (model m) failed: HTTP 401: Incorrect API key provided`,
  status: 401,
  configuration: { cause: "http-status", url: URL, status: 401 },
};
const refused: AttemptError = {
  type: "provider",
  message: `POST ${URL} (model m) failed: connection refused (connect ECONNREFUSED 127.0.0.1:9)`,
  configuration: { cause: "connection-refused", url: URL },
};
const failed = (sampleId: string, error: AttemptError = unauthorized): Seen => ({
  sampleId,
  status: "error",
  error,
});
const scored = (sampleId: string): Seen => ({ sampleId, status: "scored", error: null });

/** Feeds `attempts` in order; returns the index of the one the rule fired on, or -1. */
function firesAt(attempts: Seen[]): number {
  const watch = watchMisconfiguration();
  return attempts.findIndex((a) => watch.observe(a) !== undefined);
}

describe("watchMisconfiguration", () => {
  it("fires on the third sample that fails with the same configuration fault", () => {
    expect(MISCONFIGURED_AFTER_SAMPLES).toBe(3);
    const watch = watchMisconfiguration();
    expect(watch.observe(failed("a"))).toBeUndefined();
    expect(watch.observe(failed("b"))).toBeUndefined();
    expect(watch.observe(failed("c"))).toEqual({ error: unauthorized, samples: 3 });
    // Once: later attempts are not judged again.
    expect(watch.observe(failed("d"))).toBeUndefined();
  });

  it("fires for a refused connection as for a status", () => {
    expect(firesAt(["a", "b", "c"].map((id) => failed(id, refused)))).toBe(2);
  });

  it("counts samples, not attempts: a key's retries and other epochs add nothing", () => {
    expect(firesAt([failed("a"), failed("a"), failed("a"), failed("b"), failed("c")])).toBe(4);
  });

  it("never fires once an attempt succeeded", () => {
    expect(firesAt([scored("a"), failed("b"), failed("c"), failed("d"), failed("e")])).toBe(-1);
    expect(firesAt([failed("a"), failed("b"), scored("c"), failed("d"), failed("e")])).toBe(-1);
  });

  it("needs identical causes: another status, message or URL disarms it", () => {
    const forbidden: AttemptError = {
      ...unauthorized,
      message: unauthorized.message.replace("401", "403"),
      status: 403,
      configuration: { cause: "http-status", url: URL, status: 403 },
    };
    const otherModel = { ...unauthorized, message: unauthorized.message.replace("m)", "m2)") };
    const otherUrl: AttemptError = {
      ...unauthorized,
      configuration: { cause: "http-status", url: "http://elsewhere/v1", status: 401 },
    };
    for (const odd of [forbidden, otherModel, otherUrl, refused]) {
      expect(firesAt([failed("a"), failed("b", odd), failed("c"), failed("d"), failed("e")])).toBe(
        -1,
      );
    }
  });

  it("ignores errors that are not configuration faults, and disarms on them", () => {
    const notFound: AttemptError = { type: "provider", message: "HTTP 404", status: 404 };
    const serverError: AttemptError = { type: "provider", message: "HTTP 500", status: 500 };
    const solver: AttemptError = { type: "solver", message: "boom" };
    const timeout: AttemptError = { type: "timeout", message: "timed out" };
    const scorer: AttemptError = { ...unauthorized, type: "scorer", scorer: "judge" };
    for (const other of [notFound, serverError, solver, timeout, scorer]) {
      expect(firesAt(["a", "b", "c", "d"].map((id) => failed(id, other)))).toBe(-1);
      expect(firesAt([failed("a", other), failed("b"), failed("c"), failed("d")])).toBe(-1);
    }
  });

  it("takes its threshold as an argument", () => {
    const watch = watchMisconfiguration(1);
    expect(watch.observe(failed("a"))).toMatchObject({ samples: 1 });
  });
});
