import { runModel } from "../../core/run-model.js";
import { createHash } from "node:crypto";
import { distributionChartSvg, escapeXml as esc } from "../../core/score-chart.js";
import type { UsageTotal } from "../../core/aggregate.js";
import { formatCost, formatCount } from "../render/format.js";
import { limitedNote, retriesText } from "../render/summary.js";
import { REPORT_CSS, REPORT_JS } from "./html-page.js";
import type { HtmlData } from "./report-data.js";

/** A CSP source for exactly this inline text (`'sha256-…'`): the browser runs nothing else. */
const cspHash = (text: string) =>
  `'sha256-${createHash("sha256").update(text, "utf8").digest("base64")}'`;

/**
 * The report's Content Security Policy: no load from anywhere, and only the page's own style
 * and script by their hashes. Escaping keeps sample text out of the markup; this makes a slip in
 * it harmless too, since an injected `<script>` or `<style>` matches no hash and does not run.
 */
const REPORT_CSP = `default-src 'none'; style-src ${cspHash(REPORT_CSS)}; script-src ${cspHash(REPORT_JS)}`;

/**
 * The run as one self-contained HTML file: inline CSS and JS, no URL to anywhere (a Content
 * Security Policy forbids any load, and runs only the page's own script and style). The header (eval, model, status, spend, retries), the metrics with
 * standard errors, the score-distribution chart (`scoreChartSvg`, as in the web UI) and the
 * samples table, whose rows travel as JSON and are drawn by the page's script. A run over
 * `HTML_ROW_LIMIT` keys is a summary: its table holds the worst keys only, and says so. Every
 * text from the run is escaped: in markup with `escapeXml`, in the JSON block with `<` as
 * `\u003c`.
 *
 * @example const page = htmlReport(await gatherHtml(run, report, pages, 1), 1); page.includes(run.id) // true
 */
export function htmlReport(data: HtmlData, passThreshold: number): string {
  const { run, report } = data;
  const scorers = run.config.scorers;
  const metrics = report.metrics
    .map(
      (m) =>
        `<tr><td>${esc(m.scorer)}</td><td class="num">${m.mean === null ? "–" : m.mean.toFixed(4)}</td>` +
        `<td class="num">${m.stderr === null ? "–" : m.stderr.toFixed(4)}</td>` +
        `<td class="num">${formatCount(m.samples)}</td></tr>`,
    )
    .join("");
  const { totalSpent, reused } = report.usage;
  const errors = Object.entries(report.errorsByType)
    .map(([type, n]) => `${esc(type)} ${n ?? 0}`)
    .join(", ");
  const headers = [
    "sample",
    "epoch",
    "result",
    "input",
    "target",
    "output",
    ...scorers,
    "error",
    "ms",
  ];
  const payload = JSON.stringify({ scorers, passThreshold, rows: data.rows }).replace(
    /</g,
    "\\u003c",
  );
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="${REPORT_CSP}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>stet · ${esc(run.evalName)} · ${esc(run.id)}</title>
<style>${REPORT_CSS}</style></head>
<body>
<header><h1>${esc(run.evalName)}</h1>
<p class="meta">run <code id="run-id">${esc(run.id)}</code> · model ${esc(runModel(run.config) ?? "–")} · status <span class="badge" id="status">${esc(report.status)}</span> · created ${esc(run.createdAt)}</p>
<p class="meta">${formatCount(report.counts.scored)} of ${formatCount(report.counts.total)} keys scored${esc(limitedNote(report))} · ${formatCount(report.counts.errored)} errored · ${formatCount(report.counts.remaining)} remaining${errors ? ` · errors: ${errors}` : ""}</p>
<p class="meta">spend: ${esc(formatCost(totalSpent, true))} spent${reused.attempts > 0 ? ` · ${esc(formatCost(reused))} imported (${formatCount(reused.attempts)} outcomes paid elsewhere)` : ""} · ${formatCount(totalSpent.inputTokens)} input / ${formatCount(totalSpent.outputTokens)} output tokens${esc(tierNote(totalSpent))}</p>
<p class="meta">retries: ${esc(retriesText(report.retries))}</p></header>
<section><h2>Metrics</h2><table class="metrics"><thead><tr><th>scorer</th><th>mean</th><th>± stderr</th><th>samples</th></tr></thead><tbody>${metrics}</tbody></table></section>
<section><h2>Score distribution</h2>${distributionChartSvg(data.distribution)}</section>
<section><h2>Samples</h2>${summaryNote(data)}
<div class="filters"><select id="f-result" aria-label="Result"><option value="">any result</option><option value="pass">pass</option><option value="fail">fail (score &lt; ${passThreshold})</option><option value="error">error</option><option value="pending">pending</option></select>
<select id="f-status" aria-label="Status"><option value="">any status</option><option value="scored">scored</option><option value="error">error</option><option value="pending">pending</option></select>
<input id="f-search" type="search" aria-label="Search" placeholder="search id, input, target, output, error"> <span id="count"></span></div>
<table class="samples"><thead><tr>${headers.map((h) => `<th>${esc(h)}</th>`).join("")}</tr></thead><tbody></tbody></table>
<button id="more" type="button" hidden>Show more</button></section>
<script type="application/json" id="stet-data">${payload}</script>
<script>${REPORT_JS}</script>
</body></html>
`;
}

/** Over the row limit: what the table holds instead of every key, and where the rest is. */
function summaryNote(data: HtmlData): string {
  if (!data.summary) return "";
  return (
    `\n<p class="meta" id="summary-note">This run has ${formatCount(data.keys)} keys, over the ` +
    `report's limit of ${formatCount(data.summary.limit)}: the table holds the ` +
    `${formatCount(data.rows.length)} worst (errors first, then the lowest scores). ` +
    `<code>stet export --format jsonl</code> or <code>csv</code> has every key.</p>`
  );
}

/** The cached, cache-write and reasoning parts of a total's tokens, when it has any. */
function tierNote(total: UsageTotal): string {
  const parts = [
    total.cachedInputTokens > 0 && `${formatCount(total.cachedInputTokens)} cached input`,
    total.cacheWriteTokens > 0 && `${formatCount(total.cacheWriteTokens)} cache writes`,
    total.reasoningTokens > 0 && `${formatCount(total.reasoningTokens)} reasoning`,
  ].filter((p): p is string => p !== false);
  return parts.length > 0 ? ` (of which ${parts.join(", ")})` : "";
}
