import { reduceEpochs } from "../../core/aggregate.js";
import { scoresStand } from "../../core/outcomes.js";
import type { RunReport } from "../../core/events.js";
import type { ScoreSeries } from "../../core/score-chart.js";
import type { Attempt, Run, SampleRecord } from "../../core/types.js";
import { loadOutcomes } from "../../evalport/build-result-set.js";
import { readRun } from "../../runs/read-run.js";
import type { Store } from "../../store/types.js";

/** What the JUnit, HTML and Markdown exports read: the run, its report and its outcomes. */
export interface ReportData {
  run: Run;
  report: RunReport;
  samples: SampleRecord[];
  /** Each key's current outcome, in key order (`loadOutcomes`). */
  outcomes: Attempt[];
}

/**
 * Reads a run for a human-facing export through the same paths as `stet show` (the report) and
 * the jsonl/csv exports (the outcomes). `E_RUN_NOT_FOUND` for an unknown run.
 *
 * @example const { run, report, outcomes } = await loadReportData(store, "r_abc");
 */
export async function loadReportData(store: Store, runId: string): Promise<ReportData> {
  const { run, report } = await readRun(store, runId);
  const { samples, outcomes } = await loadOutcomes(store, runId);
  return { run, report, samples, outcomes };
}

/**
 * Per scorer of the run's config, each sample's scored epochs (and scorer errors, whose other
 * scores stand) reduced by the run's reducer: the values the metrics average, and the
 * score-distribution chart draws.
 *
 * @example scoreSeries(data)[0] // { scorer: "exact", values: [1, 0, 1, …] }
 */
export function scoreSeries(run: Run, outcomes: readonly Attempt[]): ScoreSeries[] {
  return run.config.scorers.map((scorer) => {
    const bySample = new Map<string, number[]>();
    for (const a of outcomes) {
      if (!scoresStand(a)) continue;
      const value = a.scores.find((s) => s.scorer === scorer)?.value;
      if (typeof value !== "number") continue;
      const list = bySample.get(a.sampleId) ?? [];
      list.push(value);
      bySample.set(a.sampleId, list);
    }
    const values = [...bySample.values()].map((v) => reduceEpochs(v, run.config.reducer));
    return { scorer, values };
  });
}
