import { describe, expect, it } from "vitest";
import type { Attempt } from "../core/types.js";
import { GRADER_PASSED_KEY, GRADER_TYPE_KEY } from "./grader-mapping.js";
import { fromResult, NOT_REFERENCED, toResult } from "./result-mapping.js";
import type { EvalPortResult } from "./result-set-types.js";
import { validateDocument } from "./validate-document.js";

const base: Attempt = {
  runId: "r_test",
  sampleId: "q1",
  epoch: 1,
  attempt: 1,
  status: "scored",
  output: "4",
  scores: [{ scorer: "exact", value: 1, answer: "4" }],
  usage: { inputTokens: 12, outputTokens: 3, costUsd: 0.0002 },
  transcript: null,
  error: null,
  startedAt: "2026-01-15T10:00:00.000Z",
  completedAt: "2026-01-15T10:00:01.250Z",
  durationMs: 1250,
  fingerprint: "f".repeat(64),
  provenance: { kind: "executed" },
};
const attempt = (over: Partial<Attempt>): Attempt => ({ ...base, ...over });

const roundTripCases: Array<[string, Attempt, number]> = [
  ["a scored string output", base, 1],
  ["a later epoch of a multi-epoch run", attempt({ epoch: 3, attempt: 2 }), 3],
  ["JSON output", attempt({ output: { b: [1, { d: null }], a: "x" } }), 1],
  ["a number output", attempt({ output: 42 }), 1],
  ["an empty string output", attempt({ output: "" }), 1],
  [
    "an attempt a per-sample limit ended",
    attempt({ output: "so far", limit: { limit: "costUsd", value: 0.01, used: 0.0126 } }),
    1,
  ],
  [
    "cached, cache-write and reasoning tokens and a reused part",
    attempt({
      usage: {
        inputTokens: 1300,
        outputTokens: 130,
        cachedInputTokens: 800,
        cacheWriteTokens: 200,
        reasoningTokens: 40,
        costUsd: 0.003,
        reused: { inputTokens: 1000, outputTokens: 100, cachedInputTokens: 800 },
      },
    }),
    1,
  ],
  [
    "a provider error with status",
    attempt({
      status: "error",
      output: null,
      scores: [],
      usage: null,
      error: { type: "provider", message: "rate limited", status: 429 },
    }),
    1,
  ],
  [
    "a timeout",
    attempt({
      status: "error",
      output: null,
      scores: [],
      error: { type: "timeout", message: "t" },
    }),
    2,
  ],
  [
    "a scorer error after a first score",
    attempt({
      status: "error",
      scores: [{ scorer: "exact", value: 0 }],
      error: { type: "scorer", scorer: "judge", message: "judge reply unparsable" },
    }),
    1,
  ],
  [
    "a scorer error beside the scores that stand",
    attempt({
      status: "error",
      scores: [
        { scorer: "exact", value: 1, answer: "4" },
        { scorer: "judge", value: null, error: "no GRADE line" },
        { scorer: "judge2", value: null, error: "HTTP 500" },
      ],
      error: {
        type: "scorer",
        scorer: "judge",
        message: "no GRADE line (and 1 more scorer failed: judge2)",
      },
    }),
    1,
  ],
  [
    "skipped, explained and annotated scores",
    attempt({
      scores: [
        { scorer: "g_human", value: null, skipped: "human_review_pending", explanation: "later" },
        {
          scorer: "judge",
          value: 0.5,
          answer: "P",
          explanation: "partly right",
          metadata: { grade: "P", nested: { k: [1, 2] } },
        },
      ],
    }),
    1,
  ],
  [
    "suite grader scores with their type, pass flag and unreferenced graders",
    attempt({
      scores: [
        { scorer: "gr_a", value: null, skipped: NOT_REFERENCED },
        {
          scorer: "gr_sim",
          value: 0.9,
          metadata: { [GRADER_TYPE_KEY]: "contains", [GRADER_PASSED_KEY]: true },
        },
        { scorer: "gr_b", value: null, skipped: NOT_REFERENCED },
      ],
    }),
    1,
  ],
  [
    "a transcript, no usage and an imported provenance",
    attempt({
      transcript: [{ role: "user", content: "2+2" }],
      usage: null,
      provenance: { kind: "imported", source: "sha256:abc" },
    }),
    1,
  ],
  ["usage without a price", attempt({ usage: { inputTokens: 5, outputTokens: 0 } }), 1],
  ["its retries (re-sent model requests)", attempt({ retries: 3 }), 1],
  [
    "a provider error after retries",
    attempt({
      status: "error",
      output: null,
      scores: [],
      usage: null,
      error: { type: "provider", message: "HTTP 503 after 3 attempts", status: 503 },
      retries: 2,
    }),
    1,
  ],
];

describe("toResult / fromResult", () => {
  it.each(roundTripCases)("round-trips %s losslessly", (_name, a, epochs) => {
    const result = toResult(a, { epochs });
    expect(validateDocument(result, "result").errors).toEqual([]);
    const { runId, attempt: stored, ...fields } = a;
    const scorers = a.scores.map((s) => s.scorer);
    expect(fromResult(result, { scorers })).toEqual({ ...fields, runId, storedAttempt: stored });
  });

  it("maps a scored attempt field by field", () => {
    expect(toResult(base, { epochs: 1 })).toEqual({
      test_case_id: "q1",
      actual_output: "4",
      passed: true,
      grader_results: [
        {
          grader_id: "exact",
          type: "exact_match",
          score: 1,
          passed: true,
          metadata: { stet: { answer: "4" } },
        },
      ],
      duration_ms: 1250,
      completed_at: "2026-01-15T10:00:01.250Z",
      metadata: {
        openeval: { cost: { input_tokens: 12, output_tokens: 3, estimated_cost_usd: 0.0002 } },
        stet: {
          run_id: "r_test",
          attempt: 1,
          fingerprint: "f".repeat(64),
          provenance: { kind: "executed" },
          started_at: "2026-01-15T10:00:00.000Z",
        },
      },
    });
  });

  it("writes attempt only for multi-epoch runs", () => {
    expect(toResult(base, { epochs: 1 })).not.toHaveProperty("attempt");
    expect(toResult(attempt({ epoch: 2 }), { epochs: 2 }).attempt).toBe(2);
  });

  it.each([
    ["timeout", "timeout", true],
    ["provider", "provider_error", true],
    ["solver", "runner_error", false],
  ] as const)(
    "maps a %s error to %s (retryable %s), failed and unscored",
    (type, mapped, retry) => {
      const result = toResult(
        attempt({ status: "error", output: null, scores: [], error: { type, message: "boom" } }),
        { epochs: 1 },
      );
      expect(result).toMatchObject({
        actual_output: "",
        passed: false,
        grader_results: [],
        error: { type: mapped, message: "boom", retryable: retry },
        metadata: { openeval: { aggregation_status: "unscored" } },
      });
    },
  );

  it("records a throwing scorer as a null GraderResult (GRADER_ERROR)", () => {
    const result = toResult(
      attempt({
        status: "error",
        scores: [],
        error: { type: "scorer", scorer: "judge", message: "no GRADE line" },
      }),
      { epochs: 1 },
    );
    expect(result.grader_results).toEqual([
      expect.objectContaining({
        grader_id: "judge",
        score: null,
        passed: false,
        metadata: expect.objectContaining({ skip_reason: "grader_error", error: "no GRADE line" }),
      }),
    ]);
    expect(validateDocument(result, "result").valid).toBe(true);
  });

  it("records each scorer's error as its own GRADER_ERROR, beside the scores that stand", () => {
    const result = toResult(
      attempt({
        status: "error",
        scores: [
          { scorer: "exact", value: 1 },
          { scorer: "judge", value: null, error: "no GRADE line" },
        ],
        error: { type: "scorer", scorer: "judge", message: "no GRADE line" },
      }),
      { epochs: 1 },
    );
    expect(result.grader_results).toEqual([
      { grader_id: "exact", type: "exact_match", score: 1, passed: true },
      {
        grader_id: "judge",
        type: "custom",
        score: null,
        passed: false,
        metadata: {
          skip_reason: "grader_error",
          error: "no GRADE line",
          stet: { scorer_error: true },
        },
      },
    ]);
    expect(validateDocument(result, "result").valid).toBe(true);
  });

  it.each([
    ["all graders pass", [1, 1], true],
    ["one grader fails", [1, 0], false],
    ["partial credit is not a pass (threshold 1)", [0.5], false],
    ["null scores are left out", [1, null], true],
    ["every score null: unscored, not passed", [null], false],
  ] as const)("passed: %s", (_name, values, passed) => {
    const scores = values.map((value, i) =>
      value === null
        ? { scorer: `s${i}`, value, skipped: "unsupported_grader_type" }
        : { scorer: `s${i}`, value },
    );
    const result = toResult(attempt({ scores }), { epochs: 1 });
    expect(result.passed).toBe(passed);
    expect(validateDocument(result, "result").valid).toBe(true);
  });

  it("JSON output is exported as canonical JSON text", () => {
    const result = toResult(attempt({ output: { b: 1, a: [true] } }), { epochs: 1 });
    expect(result.actual_output).toBe('{"a":[true],"b":1}');
  });

  it("gives a non-offset timestamp an offset", () => {
    const result = toResult(attempt({ completedAt: "2026-01-15T10:00:01" }), { epochs: 1 });
    expect(result.completed_at).toMatch(/Z$/);
  });

  it("reads another tool's Result tolerantly", () => {
    const foreign: EvalPortResult = {
      test_case_id: "tc_9",
      attempt: 2,
      actual_output: "Paris",
      passed: true,
      completed_at: "2026-08-22T09:00:09+02:00",
      duration_ms: 400,
      grader_results: [
        { grader_id: "gr_sim", type: "semantic_similarity", score: 0.92, passed: true },
        { grader_id: "gr_h", type: "human", score: null, passed: false, reason: "pending" },
      ],
      metadata: { "openeval.cost": { input_tokens: 7, estimated_cost_usd: 0.01 }, trace: "t" },
    };
    const fields = fromResult(foreign);
    expect(fields).toEqual({
      sampleId: "tc_9",
      epoch: 2,
      status: "scored",
      output: "Paris",
      scores: [
        {
          scorer: "gr_sim",
          value: 0.92,
          metadata: { [GRADER_TYPE_KEY]: "semantic_similarity", [GRADER_PASSED_KEY]: true },
        },
        {
          scorer: "gr_h",
          value: null,
          skipped: "unscored",
          explanation: "pending",
          metadata: { [GRADER_TYPE_KEY]: "human", [GRADER_PASSED_KEY]: false },
        },
      ],
      usage: { inputTokens: 7, outputTokens: 0, costUsd: 0.01 },
      transcript: null,
      error: null,
      startedAt: "2026-08-22T07:00:08.600Z",
      completedAt: "2026-08-22T09:00:09+02:00",
      durationMs: 400,
    });
    // Exported again, the grader types and verdicts are the foreign ones.
    const again = toResult(
      {
        ...fields,
        runId: "r",
        attempt: 1,
        fingerprint: "x",
        provenance: { kind: "imported", source: "s" },
      },
      { epochs: 2 },
    );
    expect(again.grader_results.map((g) => [g.type, g.passed])).toEqual([
      ["semantic_similarity", true],
      ["human", false],
    ]);
    expect(again.passed).toBe(true);
  });

  it("writes an unknown cost as estimated_cost_usd: null and reads it back as no cost", () => {
    const unpriced = attempt({ usage: { inputTokens: 5, outputTokens: 2 } });
    const result = toResult(unpriced, { epochs: 1 });
    expect(result.metadata).toMatchObject({
      openeval: { cost: { input_tokens: 5, output_tokens: 2, estimated_cost_usd: null } },
    });
    expect(validateDocument(result, "result").errors).toEqual([]);
    expect(fromResult(result).usage).toEqual({ inputTokens: 5, outputTokens: 2 });
    // Without usage there is no cost to speak of.
    expect(toResult(attempt({ usage: null }), { epochs: 1 }).metadata).not.toHaveProperty(
      "openeval.cost",
    );
  });

  it("reads a foreign error and the nested cost form", () => {
    const fields = fromResult(
      {
        test_case_id: "t",
        passed: false,
        grader_results: [],
        error: { type: "provider_error", message: "rate limited", code: 429, retryable: true },
        metadata: { openeval: { cost: { input_tokens: 1, output_tokens: 2 } } },
      },
      { fallbackTime: "2026-01-01T00:00:00Z" },
    );
    expect(fields).toMatchObject({
      status: "error",
      output: null,
      error: { type: "provider", message: "rate limited", status: 429 },
      usage: { inputTokens: 1, outputTokens: 2 },
      completedAt: "2026-01-01T00:00:00Z",
    });
    expect(fields).not.toHaveProperty("fingerprint");
  });

  it("refuses a malformed metadata.stet", () => {
    const result = toResult(base, { epochs: 1 });
    result.metadata!.stet = { fingerprint: 7 };
    expect(() => fromResult(result)).toThrow(/metadata\.stet\.fingerprint/);
  });

  it("writes retries as metadata.stet.retries, 0 included, and nothing when unknown", () => {
    expect(toResult({ ...base, retries: 0 }, { epochs: 1 }).metadata?.stet).toMatchObject({
      retries: 0,
    });
    expect(toResult(base, { epochs: 1 }).metadata?.stet).not.toHaveProperty("retries");
    const result = toResult(base, { epochs: 1 });
    result.metadata!.stet = { ...(result.metadata!.stet as object), retries: -1 };
    expect(() => fromResult(result)).toThrow(/metadata\.stet\.retries/);
  });
});
