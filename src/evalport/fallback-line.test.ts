import { describe, expect, it } from "vitest";
import { fallbackLineSchema } from "./fallback-line.js";

const line = {
  runId: "r_1",
  sampleId: "q1",
  epoch: 1,
  status: "scored",
  output: "so far",
  scores: [{ scorer: "exact", value: 0 }],
  usage: { inputTokens: 10, outputTokens: 5, costUsd: 0.0126 },
  transcript: null,
  error: null,
  startedAt: "2026-01-01T00:00:00.000Z",
  completedAt: "2026-01-01T00:00:01.000Z",
  durationMs: 1000,
  fingerprint: "f",
  provenance: { kind: "executed" },
};

describe("a fallback line", () => {
  it("keeps the per-sample limit that ended its attempt, and refuses a malformed one", () => {
    const limit = { limit: "costUsd", value: 0.01, used: 0.0126 };
    expect(fallbackLineSchema.parse({ ...line, limit })).toMatchObject({ limit });
    expect(fallbackLineSchema.safeParse({ ...line, limit: { limit: "money" } }).success).toBe(
      false,
    );
  });
});
