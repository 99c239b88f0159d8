import type { EvalPortResult, GraderSummary, ResultSetSummary } from "./result-set-types.js";

/**
 * A ResultSet's `summary`, computed from its results only (so export and merge agree):
 * `passed` counts results with `passed: true`; `skipped` the others without any non-null
 * score (unscored, e.g. an error before scoring: SPEC Rule 6 keeps them out of pass rates);
 * `failed` the rest (scored failures, and errors after some scores). `pass_rate` = passed /
 * (passed + failed); `avg_score` = the mean of every non-null grader score; `duration_ms` the
 * sum of the results'; `by_grader` per grader id (null scores counted in neither passed nor
 * failed). Sums run in the order given: pass results sorted by key for reproducible floats.
 *
 * @example summarizeResults(results) // { total: 2, passed: 1, failed: 1, skipped: 0, pass_rate: 0.5, … }
 */
export function summarizeResults(results: readonly EvalPortResult[]): ResultSetSummary {
  let passed = 0;
  let failed = 0;
  let skipped = 0;
  let durationMs = 0;
  let scoreSum = 0;
  let scoreCount = 0;
  const graders = new Map<string, { passed: number; failed: number; sum: number; n: number }>();
  for (const result of results) {
    const scored = result.grader_results.filter((g) => g.score !== null);
    if (result.passed) passed++;
    else if (scored.length === 0) skipped++;
    else failed++;
    durationMs += result.duration_ms ?? 0;
    for (const g of result.grader_results) {
      let entry = graders.get(g.grader_id);
      if (!entry) graders.set(g.grader_id, (entry = { passed: 0, failed: 0, sum: 0, n: 0 }));
      if (g.score === null) continue;
      scoreSum += g.score;
      scoreCount++;
      entry.sum += g.score;
      entry.n++;
      if (g.passed) entry.passed++;
      else entry.failed++;
    }
  }
  const byGrader: Record<string, GraderSummary> = {};
  for (const id of [...graders.keys()].sort()) {
    const e = graders.get(id)!;
    byGrader[id] = {
      passed: e.passed,
      failed: e.failed,
      ...(e.n > 0 && { avg_score: e.sum / e.n }),
    };
  }
  return {
    total: results.length,
    passed,
    failed,
    skipped,
    ...(passed + failed > 0 && { pass_rate: passed / (passed + failed) }),
    ...(scoreCount > 0 && { avg_score: clamp01(scoreSum / scoreCount) }),
    duration_ms: durationMs,
    by_grader: byGrader,
  };
}

/** A mean of values in [0, 1] is in [0, 1]; rounding must not push it out of the schema's range. */
function clamp01(x: number): number {
  return Math.min(1, Math.max(0, x));
}
