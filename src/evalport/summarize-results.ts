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
  const summary = new ResultSummary();
  for (const result of results) summary.add(result);
  return summary.finish();
}

/**
 * `summarizeResults` a result at a time: what a streamed export adds its results to as it writes
 * them, in the same order, so its sums are the same floats.
 *
 * @example const s = new ResultSummary(); s.add(result); s.finish().total // 1
 */
export class ResultSummary {
  private passed = 0;
  private failed = 0;
  private skipped = 0;
  private total = 0;
  private durationMs = 0;
  private scoreSum = 0;
  private scoreCount = 0;
  private readonly graders = new Map<
    string,
    { passed: number; failed: number; sum: number; n: number }
  >();

  add(result: EvalPortResult): void {
    this.total++;
    const scored = result.grader_results.filter((g) => g.score !== null);
    if (result.passed) this.passed++;
    else if (scored.length === 0) this.skipped++;
    else this.failed++;
    this.durationMs += result.duration_ms ?? 0;
    for (const g of result.grader_results) {
      let entry = this.graders.get(g.grader_id);
      if (!entry) this.graders.set(g.grader_id, (entry = { passed: 0, failed: 0, sum: 0, n: 0 }));
      if (g.score === null) continue;
      this.scoreSum += g.score;
      this.scoreCount++;
      entry.sum += g.score;
      entry.n++;
      if (g.passed) entry.passed++;
      else entry.failed++;
    }
  }

  finish(): ResultSetSummary {
    const byGrader: Record<string, GraderSummary> = {};
    for (const id of [...this.graders.keys()].sort()) {
      const e = this.graders.get(id)!;
      byGrader[id] = {
        passed: e.passed,
        failed: e.failed,
        ...(e.n > 0 && { avg_score: e.sum / e.n }),
      };
    }
    const { passed, failed } = this;
    return {
      total: this.total,
      passed,
      failed,
      skipped: this.skipped,
      ...(passed + failed > 0 && { pass_rate: passed / (passed + failed) }),
      ...(this.scoreCount > 0 && { avg_score: clamp01(this.scoreSum / this.scoreCount) }),
      duration_ms: this.durationMs,
      by_grader: byGrader,
    };
  }
}

/** A mean of values in [0, 1] is in [0, 1]; rounding must not push it out of the schema's range. */
function clamp01(x: number): number {
  return Math.min(1, Math.max(0, x));
}
