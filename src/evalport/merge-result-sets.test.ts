import { describe, expect, it } from "vitest";
import { isStetError } from "../core/errors.js";
import { assembleResultSet } from "./assemble-result-set.js";
import { isPartial } from "./is-partial.js";
import { mergeResultSets, type MergeInput, type MergeOptions } from "./merge-result-sets.js";
import type { EvalPortResult, ResultSetDocument } from "./result-set-types.js";
import { validateDocument } from "./validate-document.js";

const IDS = ["a", "b", "c", "d"];

/** A Result of test case `id`: `score` decides passing; `at` is its completed_at second. */
function r(id: string, score: number, at?: number | string, attempt?: number): EvalPortResult {
  return {
    test_case_id: id,
    ...(attempt !== undefined && { attempt }),
    actual_output: `out ${id} ${score}`,
    passed: score >= 1,
    grader_results: [{ grader_id: "g", type: "exact_match", score, passed: score >= 1 }],
    duration_ms: 10,
    ...(at !== undefined && {
      completed_at:
        typeof at === "string" ? at : `2026-01-01T00:00:${String(at).padStart(2, "0")}Z`,
    }),
  };
}

/** A ResultSet of run `run` whose declared suite is IDS (partial unless it covers them). */
function rs(results: EvalPortResult[], run = "r_1", ids: string[] | null = IDS): ResultSetDocument {
  return assembleResultSet(
    {
      version: "1.0.0-rc.5",
      suite_id: "s",
      run_id: run,
      started_at: "2026-01-01T00:00:00Z",
      runner: { name: "stet", version: "0.1.0" },
    },
    results,
    ids ? { testCaseIds: ids, epochs: 1 } : { declaredComplete: false },
  );
}

const merge = (
  docs: Record<string, ResultSetDocument | EvalPortResult[]>,
  options?: MergeOptions,
) =>
  mergeResultSets(
    Object.entries(docs).map(([name, doc]): MergeInput => ({ name, doc })),
    options,
  );

function refusal(run: () => unknown): { message: string; details: Record<string, unknown> } {
  try {
    run();
  } catch (error) {
    if (isStetError(error, "E_INVALID_INPUT"))
      return { message: error.message, details: error.details ?? {} };
    throw error;
  }
  throw new Error("expected the merge to be refused");
}

describe("mergeResultSets", () => {
  it.each<[string, EvalPortResult[], EvalPortResult[], EvalPortResult[], boolean]>([
    [
      "disjoint partials covering the suite",
      [r("a", 1, 1), r("b", 0, 2)],
      [r("c", 1, 3), r("d", 1, 4)],
      [r("a", 1, 1), r("b", 0, 2), r("c", 1, 3), r("d", 1, 4)],
      false,
    ],
    [
      "disjoint partials leaving a gap",
      [r("a", 1, 1)],
      [r("c", 1, 3)],
      [r("a", 1, 1), r("c", 1, 3)],
      true,
    ],
    [
      "an overlap: the later completed_at wins",
      [r("a", 0, 1), r("b", 1, 2)],
      [r("a", 1, 5), r("c", 1, 3)],
      [r("a", 1, 5), r("b", 1, 2), r("c", 1, 3)],
      true,
    ],
    [
      "later by instant, not by text (offsets)",
      [r("a", 0, "2026-01-01T01:00:00+02:00")],
      [r("a", 1, "2026-01-01T00:00:00Z")],
      [r("a", 1, "2026-01-01T00:00:00Z")],
      true,
    ],
    [
      "identical duplicates dedupe, timestamps or not",
      [r("a", 1), r("b", 1, 2)],
      [r("a", 1), r("b", 1, 2)],
      [r("a", 1), r("b", 1, 2)],
      true,
    ],
  ])("%s", (_name, left, right, expected, partial) => {
    for (const merged of [
      merge({ "a.json": rs(left), "b.json": rs(right) }),
      merge({ "b.json": rs(right), "a.json": rs(left) }),
    ]) {
      expect(merged.results).toEqual(expected);
      expect(isPartial(merged)).toBe(partial);
      expect(merged.summary).toEqual(rs(expected).summary);
      expect(validateDocument(merged, "resultset").errors).toEqual([]);
    }
  });

  it.each([
    ["either side lacks completed_at", r("a", 0), r("a", 1, 5), "missing_completed_at"],
    ["equal completed_at, different content", r("a", 0, 5), r("a", 1, 5), "equal_completed_at"],
    [
      "the same instant in two offsets",
      r("a", 0, "2026-01-01T02:00:05+02:00"),
      r("a", 1, "2026-01-01T00:00:05.000Z"),
      "equal_completed_at",
    ],
  ])("refuses when %s, listing every conflicting key", (_name, left, right, reason) => {
    const b2 = { ...r("b", 1), actual_output: "other" };
    const { message, details } = refusal(() =>
      merge({
        "x.json": rs([left, r("b", 1), r("c", 1, 3)]),
        "y.json": rs([right, b2, r("c", 1, 3)]),
      }),
    );
    expect(message).toMatch(/2 conflicting key/);
    expect(message).toMatch(/a \(attempt 1\): the results in x\.json, y\.json/);
    expect(message).toMatch(/b \(attempt 1\)/);
    expect(message).toMatch(/--prefer/);
    expect(details.conflicts).toEqual([
      { test_case_id: "a", attempt: 1, reason, sources: ["x.json", "y.json"] },
      {
        test_case_id: "b",
        attempt: 1,
        reason: "missing_completed_at",
        sources: ["x.json", "y.json"],
      },
    ]);
  });

  it("--prefer decides the conflicts the timestamps cannot, and only those", () => {
    const x = rs([r("a", 0), r("b", 0, 5), r("c", 0, 1)]);
    const y = rs([r("a", 1, 3), r("b", 1, 5), r("c", 1, 2)]);
    expect(merge({ "x.json": x, "y.json": y }, { prefer: "x.json" }).results).toEqual([
      r("a", 0),
      r("b", 0, 5),
      r("c", 1, 2),
    ]);
    expect(
      refusal(() => merge({ "x.json": x, "y.json": y }, { prefer: "z.json" })).message,
    ).toMatch(/z\.json has no result for these keys/);
  });

  it("refuses inputs of different runs, naming each file and run", () => {
    const { message } = refusal(() =>
      merge({ "a.json": rs([r("a", 1, 1)], "r_1"), "b.json": rs([r("b", 1, 1)], "r_2") }),
    );
    expect(message).toBe(
      "cannot merge results of different runs: a.json (run r_1), b.json (run r_2)",
    );
  });

  it("is commutative, associative and idempotent", () => {
    const a = rs([r("a", 0, 1), r("b", 1, 2)]);
    const b = rs([r("a", 1, 4), r("c", 0, 3)]);
    const c = rs([r("c", 1, 6), r("d", 1, 1), r("b", 1, 2)]);
    const m = (...docs: ResultSetDocument[]) =>
      mergeResultSets(docs.map((doc, i) => ({ name: `in${i}.json`, doc })));
    expect(m(a, b)).toEqual(m(b, a));
    expect(m(m(a, b), c)).toEqual(m(a, m(b, c)));
    expect(m(m(a, b), c)).toEqual(m(c, a, b));
    expect(m(a, a)).toEqual(a);
    const all = m(a, b, c);
    expect(m(all, all)).toEqual(all);
    expect(isPartial(all)).toBe(false);
    expect(all.completed_at).toBe("2026-01-01T00:00:06Z");
  });

  it("accepts Results JSONL lines beside a ResultSet", () => {
    const lines = [r("c", 1, 3), r("d", 1, 4)].map((x) => ({
      ...x,
      metadata: { stet: { run_id: "r_1" } },
    }));
    const merged = merge({ "a.json": rs([r("a", 1, 1), r("b", 1, 2)]), "b.jsonl": lines });
    expect(merged.results.map((x) => x.test_case_id)).toEqual(IDS);
    expect(isPartial(merged)).toBe(false);
    const other = lines.map((x) => ({ ...x, metadata: { stet: { run_id: "r_9" } } }));
    expect(
      refusal(() => merge({ "a.json": rs([r("a", 1, 1)]), "b.jsonl": other })).message,
    ).toMatch(/b\.jsonl \(run r_9\)/);
  });

  it("stays partial until it covers the suite given with suiteIds, and refuses ids outside it", () => {
    const x = rs([r("a", 1, 1)], "r_1", null);
    const y = rs([r("b", 1, 1)], "r_1", null);
    expect(isPartial(merge({ x, y }, { suiteIds: ["a", "b", "c"] }))).toBe(true);
    const full = merge({ x, y }, { suiteIds: ["a", "b"] });
    expect(isPartial(full)).toBe(false);
    expect(full.metadata?.stet).toEqual({ test_case_ids: ["a", "b"] });
    expect(refusal(() => merge({ x, y }, { suiteIds: ["a"] })).message).toMatch(
      /not in the suite: b/,
    );
  });

  it("an errored result does not cover its test case", () => {
    const failed = { ...r("d", 0, 9), error: { type: "provider_error" as const, message: "429" } };
    const merged = merge({ x: rs([r("a", 1, 1), r("b", 1, 1)]), y: rs([r("c", 1, 1), failed]) });
    expect(isPartial(merged)).toBe(true);
    expect(merged.metadata?.stet).toMatchObject({ covered: ["a", "b", "c"] });
  });

  it("reads the dotted partial key and a foreign complete set without declared ids", () => {
    const foreign: ResultSetDocument = {
      version: "1.0.0",
      suite_id: "s",
      run_id: "r_1",
      started_at: "2026-01-01T00:00:00Z",
      results: [r("a", 1, 1)],
    };
    const dotted = { ...foreign, results: [r("b", 1, 2)], metadata: { "openeval.partial": true } };
    const merged = merge({ "f.json": foreign, "d.json": dotted });
    expect(isPartial(merged)).toBe(false);
    expect(merged.version).toBe("1.0.0");
    const partialOnly = merge({ "d.json": dotted });
    expect(partialOnly.metadata).toEqual({ openeval: { partial: true } });
  });

  it("combines disagreeing header fields whatever the order", () => {
    const x = {
      ...rs([r("a", 1, 1)]),
      runner: { name: "stet", version: "0.1.0" },
      provider: { model: "m" },
    };
    const y = {
      ...rs([r("b", 1, 1)]),
      runner: { name: "stet", version: "0.2.0" },
      started_at: "2025-12-31T23:00:00Z",
    };
    const merged = merge({ x, y });
    expect(merged).toMatchObject({
      runner: { name: "stet", version: "0.2.0" },
      provider: { model: "m" },
      started_at: "2025-12-31T23:00:00Z",
    });
    expect(merge({ y, x })).toEqual(merged);
  });

  it("keys by (test_case_id, attempt)", () => {
    const x = rs([r("a", 1, 1, 1), r("a", 0, 1, 2)], "r_1", ["a"]);
    const y = rs([r("a", 1, 5, 2)], "r_1", ["a"]);
    expect(merge({ x, y }).results).toEqual([r("a", 1, 1, 1), r("a", 1, 5, 2)]);
  });
});
