/**
 * The score-distribution chart of a run: per scorer, how many samples' reduced values fall in
 * each tenth of [0, 1], drawn as an inline SVG. One pure module, so the HTML export and the web
 * UI draw the same chart (the UI bundle imports this file and nothing else of core/).
 */

/** One scorer's per-sample values (epoch-reduced), as the chart takes them. */
export interface ScoreSeries {
  scorer: string;
  values: readonly number[];
}

/** One scorer's histogram: `counts[i]` samples have a reduced value in bin i. */
export interface ScoreDistribution {
  scorer: string;
  counts: readonly number[];
}

/** Bins of [0, 1]: bin i holds [i/n, (i+1)/n), the last one also holds 1. */
export const CHART_BINS = 10;

/**
 * How many values fall in each of `bins` equal bins of [0, 1]; out-of-range values are clamped.
 *
 * @example scoreHistogram([0, 0.05, 1, 1], 10) // [2, 0, 0, 0, 0, 0, 0, 0, 0, 2]
 */
export function scoreHistogram(values: readonly number[], bins = CHART_BINS): number[] {
  const counts = new Array<number>(bins).fill(0);
  for (const v of values) {
    if (!Number.isFinite(v)) continue;
    const i = Math.min(bins - 1, Math.max(0, Math.floor(v * bins)));
    counts[i] = (counts[i] ?? 0) + 1;
  }
  return counts;
}

const WIDTH = 320;
const HEIGHT = 120;
const PAD = 18;

/** SVG's namespace: without it, the chart parsed as XML (the web UI) is no SVG at all. */
const SVG_NAMESPACE = "http://www.w3.org/2000/svg";

/** How the chart's text is used. */
export interface ChartOptions {
  /**
   * Parsed on its own (`image/svg+xml`, as the web UI does): the `<svg>` then names its
   * namespace. Inline in HTML (the report) the parser supplies it, and the text names no URL.
   */
  standalone?: boolean;
}

/**
 * The chart as SVG text: one small histogram per scorer, bars labelled with their counts. All
 * text is escaped, so a scorer name cannot inject markup.
 *
 * @example scoreChartSvg([{ scorer: "exact", values: [1, 0, 1] }]) // '<svg … role="img" …>…</svg>'
 */
export function scoreChartSvg(series: readonly ScoreSeries[], options: ChartOptions = {}): string {
  return distributionChartSvg(
    series.map((s) => ({ scorer: s.scorer, counts: scoreHistogram(s.values) })),
    options,
  );
}

/**
 * The same chart from histograms already counted (a run report's `distribution`): what the web
 * UI draws without fetching every sample's value.
 *
 * @example distributionChartSvg(report.distribution, { standalone: true })
 */
export function distributionChartSvg(
  series: readonly ScoreDistribution[],
  options: ChartOptions = {},
): string {
  const panels = series.map((s, i) => panel(s, i * (HEIGHT + PAD)));
  const height = Math.max(1, series.length) * (HEIGHT + PAD);
  const label = `Score distribution of ${series.map((s) => s.scorer).join(", ") || "no scorer"}`;
  return (
    `<svg ${options.standalone ? `xmlns="${SVG_NAMESPACE}" ` : ""}class="score-chart" role="img" ` +
    `aria-label="${escapeXml(label)}" width="${WIDTH}" height="${height}" ` +
    `viewBox="0 0 ${WIDTH} ${height}" font-family="sans-serif" font-size="10">` +
    (series.length === 0 ? `<text x="4" y="14">No scores yet.</text>` : panels.join("")) +
    `</svg>`
  );
}

function panel(series: ScoreDistribution, top: number): string {
  const { counts } = series;
  const n = counts.reduce((sum, c) => sum + c, 0);
  const max = Math.max(1, ...counts);
  const plotTop = top + 14;
  const plotHeight = HEIGHT - 30;
  const barWidth = (WIDTH - 8) / counts.length;
  const bars = counts.map((count, i) => {
    const h = (count / max) * plotHeight;
    const x = 4 + i * barWidth;
    const y = plotTop + plotHeight - h;
    const range = `${(i / counts.length).toFixed(1)}–${((i + 1) / counts.length).toFixed(1)}`;
    return (
      `<g class="bin" data-count="${count}"><title>${escapeXml(`${range}: ${count}`)}</title>` +
      `<rect x="${x.toFixed(1)}" y="${y.toFixed(1)}" width="${(barWidth - 2).toFixed(1)}" ` +
      `height="${h.toFixed(1)}" fill="#4a7bd0"/>` +
      (count > 0
        ? `<text x="${(x + barWidth / 2 - 1).toFixed(1)}" y="${(y - 2).toFixed(1)}" text-anchor="middle">${count}</text>`
        : "") +
      `</g>`
    );
  });
  const axis = plotTop + plotHeight;
  return (
    `<g class="panel" data-scorer="${escapeXml(series.scorer)}">` +
    `<text x="4" y="${top + 10}" font-weight="bold">${escapeXml(series.scorer)} (n=${n})</text>` +
    bars.join("") +
    `<line x1="4" x2="${WIDTH - 4}" y1="${axis}" y2="${axis}" stroke="#888"/>` +
    `<text x="4" y="${axis + 11}">0</text>` +
    `<text x="${WIDTH - 4}" y="${axis + 11}" text-anchor="end">1</text>` +
    `</g>`
  );
}

/**
 * Text made safe inside XML/HTML elements and attribute values.
 *
 * @example escapeXml(`<a href="x">&`) // "&lt;a href=&quot;x&quot;&gt;&amp;"
 */
export function escapeXml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ENTITIES[c] ?? c);
}

const ENTITIES: Record<string, string> = {
  "&": "&amp;",
  "<": "&lt;",
  ">": "&gt;",
  '"': "&quot;",
  "'": "&#39;",
};
