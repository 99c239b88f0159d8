import { reduceEpochs } from "../../core/aggregate.js";
import type { Json } from "../../core/json.js";
import { scoresStand } from "../../core/outcomes.js";
import type { RunReport } from "../../core/events.js";
import { scoreHistogram, type ScoreDistribution } from "../../core/score-chart.js";
import type { Attempt, Run } from "../../core/types.js";
import type { SampleOutcomes } from "../../evalport/outcome-pages.js";

/**
 * Keys up to which the HTML report embeds every row; over it the page is a summary whose table
 * holds the `HTML_WORST` worst keys (docs/reports-and-ci.md). A page of 10,000 rows still opens
 * fast; one of millions would not open at all.
 */
export const HTML_ROW_LIMIT = 10_000;
/** The rows a summary page keeps: errors first, then the lowest scores. */
export const HTML_WORST = 1_000;

/** What the HTML export draws: the run, its report, the score histograms and the table's rows. */
export interface HtmlData {
  run: Run;
  report: RunReport;
  /** Per scorer of the run's config, the histogram of the samples' reduced scores. */
  distribution: ScoreDistribution[];
  /** Per key (outcome or not yet): id, epoch, status, input, target, output, scores, error, ms. */
  rows: unknown[][];
  /** The run's keys: more than `rows` when the page is a summary. */
  keys: number;
  /** Set when the run is over `HTML_ROW_LIMIT`: the rows are its worst keys, in key order. */
  summary?: { limit: number; worst: number };
}

/**
 * One pass over a run's keys (whole samples and attempts, in key order) for the HTML report: the
 * score histograms (each sample's scored epochs, and scorer errors, whose other scores stand,
 * reduced by the run's reducer) and the table's rows, every key's up to `limit` keys, else only
 * the `worst` worst (errors, then the lowest score under the threshold, then key order). Holds at
 * most `limit` rows, whatever the run's size.
 *
 * @example const data = await gatherHtml(run, report, pages, 1);
 */
export async function gatherHtml(
  run: Run,
  report: RunReport,
  pages: AsyncIterable<readonly SampleOutcomes<Attempt>[]>,
  passThreshold: number,
  sizes: { limit: number; worst: number } = { limit: HTML_ROW_LIMIT, worst: HTML_WORST },
): Promise<HtmlData> {
  const { scorers, epochs, reducer } = run.config;
  const counts = scorers.map(() => new Array<number>(scoreHistogram([]).length).fill(0));
  let rows: { row: unknown[]; rank: number; index: number }[] = [];
  let keys = 0;
  for await (const page of pages) {
    for (const { sample, outcomes } of page) {
      scorers.forEach((scorer, i) => {
        const values: number[] = [];
        for (const a of outcomes) {
          const value = scoresStand(a) && a.scores.find((s) => s.scorer === scorer)?.value;
          if (typeof value === "number") values.push(value);
        }
        if (values.length === 0) return;
        const bins = scoreHistogram([reduceEpochs(values, reducer)]);
        bins.forEach((n, b) => (counts[i]![b]! += n));
      });
      for (let epoch = 1; epoch <= epochs; epoch++) {
        const a = outcomes.find((o) => o.epoch === epoch);
        const row = tableRow(run, sample.record?.sample, sample.id, epoch, a);
        rows.push({ row, rank: badness(a, passThreshold), index: keys++ });
        if (keys > sizes.limit && rows.length >= 2 * sizes.worst) rows = worstOf(rows, sizes.worst);
      }
    }
  }
  const over = keys > sizes.limit;
  if (over) rows = worstOf(rows, sizes.worst).sort((x, y) => x.index - y.index);
  return {
    run,
    report,
    distribution: scorers.map((scorer, i) => ({ scorer, counts: counts[i]! })),
    rows: rows.map((r) => r.row),
    keys,
    ...(over && { summary: { limit: sizes.limit, worst: sizes.worst } }),
  };
}

function worstOf<T extends { rank: number; index: number }>(rows: T[], n: number): T[] {
  return rows.sort((x, y) => x.rank - y.rank || x.index - y.index).slice(0, n);
}

/** Lower is worse: an error, then a score under the threshold (the lowest first), then the rest. */
function badness(a: Attempt | undefined, threshold: number): number {
  if (a === undefined) return 4;
  if (a.status === "error") return 0;
  const low = a.scores.flatMap((s) =>
    typeof s.value === "number" && s.value < threshold ? [s.value] : [],
  );
  return low.length > 0 ? 1 + Math.min(...low) : 3;
}

function tableRow(
  run: Run,
  sample: { input: Json; target?: Json } | undefined,
  sampleId: string,
  epoch: number,
  a: Attempt | undefined,
): unknown[] {
  return [
    sampleId,
    epoch,
    a?.status ?? "pending",
    plain(sample?.input),
    plain(sample?.target),
    a ? plain(a.output) : "",
    run.config.scorers.map((s) => a?.scores.find((x) => x.scorer === s)?.value ?? null),
    a?.error ? `${a.error.type}: ${a.error.message}` : "",
    a?.durationMs ?? null,
  ];
}

function plain(value: Json | undefined): string {
  if (value === undefined || value === null) return "";
  return typeof value === "string" ? value : JSON.stringify(value);
}
