import { describe, expect, it } from "vitest";
import type { Attempt, SampleRecord } from "../core/types.js";
import { csvColumns, csvRow } from "./export-csv.js";

const attempt: Attempt = {
  runId: "r_x",
  sampleId: "s1",
  epoch: 2,
  attempt: 1,
  fingerprint: "f",
  status: "scored",
  output: { answer: 42 },
  scores: [
    { scorer: "status", value: 1 },
    { scorer: "judge", value: null, skipped: "no target" },
  ],
  usage: { inputTokens: 5, outputTokens: 7 },
  transcript: null,
  error: null,
  startedAt: "2026-01-01T00:00:00.000Z",
  completedAt: "2026-01-01T00:00:01.000Z",
  durationMs: 1000,
  provenance: { kind: "executed" },
} as Attempt;
const samples = new Map<string, SampleRecord>([
  ["s1", { sample: { id: "s1", input: "two words", target: true }, fingerprint: "f" }],
]);

describe("the CSV export's shape", () => {
  it("columns: fixed ones around one per scorer, each scorer once", () => {
    expect(csvColumns(["status", "judge", "status"]).map((c) => c.header)).toEqual([
      "sampleId",
      "epoch",
      "status",
      "input",
      "target",
      "output",
      "status",
      "judge",
      "error",
      "inputTokens",
      "outputTokens",
      "costUsd",
      "startedAt",
      "completedAt",
      "durationMs",
      "retries",
      "cachedInputTokens",
      "cacheWriteTokens",
      "reasoningTokens",
      "reusedCostUsd",
      "limit",
      "limitValue",
      "limitUsed",
    ]);
  });

  it("a row: strings plain, nested values and booleans as JSON, absent values empty; a scorer named like a column does not replace it", () => {
    const columns = csvColumns(["status", "judge"]);
    const row = csvRow(attempt, samples, ["status", "judge"]);
    expect(columns.map((c) => row[c.key])).toEqual([
      "s1",
      2,
      "scored",
      "two words",
      "true",
      '{"answer":42}',
      1,
      "",
      "",
      5,
      7,
      "",
      "2026-01-01T00:00:00.000Z",
      "2026-01-01T00:00:01.000Z",
      1000,
      // Stored before retries were counted: unknown, an empty cell rather than 0.
      "",
      // No cached, cache-write or reasoning tokens reported, nothing replayed.
      "",
      "",
      "",
      "",
      // No per-sample limit ended it.
      "",
      "",
      "",
    ]);
  });

  it("the tier cells: cached, cache-write and reasoning tokens, and what replayed calls cost", () => {
    const usage = {
      inputTokens: 1000,
      outputTokens: 100,
      cachedInputTokens: 800,
      cacheWriteTokens: 0,
      reasoningTokens: 40,
      costUsd: 0.5,
      reused: { inputTokens: 10, outputTokens: 1, costUsd: 0.25 },
    };
    expect(csvRow({ ...attempt, usage }, samples, [])).toMatchObject({
      cachedInputTokens: 800,
      cacheWriteTokens: 0,
      reasoningTokens: 40,
      reusedCostUsd: 0.25,
    });
  });

  it("the retries cell: the attempt's count of re-sent model requests, 0 included", () => {
    expect(csvRow({ ...attempt, retries: 3 }, samples, []).retries).toBe(3);
    expect(csvRow({ ...attempt, retries: 0 }, samples, []).retries).toBe(0);
  });

  it("the limit cells: which per-sample limit ended the attempt, its value and what was used; empty when none did", () => {
    const limited = { ...attempt, limit: { limit: "turns" as const, value: 3, used: 3 } };
    expect(csvRow(limited, samples, [])).toMatchObject({
      status: "scored",
      error: "",
      limit: "turns",
      limitValue: 3,
      limitUsed: 3,
    });
    expect(csvRow(attempt, samples, [])).toMatchObject({
      limit: "",
      limitValue: "",
      limitUsed: "",
    });
  });
});
