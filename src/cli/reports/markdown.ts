import type { RunReport } from "../../core/events.js";
import { formatCost, formatCount } from "../render/format.js";
import { limitedNote, retriesText } from "../render/summary.js";

export interface MarkdownOptions {
  model?: string;
  /** The command that finishes the run, shown when it is incomplete. */
  resumeCommand?: string;
  /** Incomplete even with no key left (a rescore that stopped early): show `resumeCommand`. */
  incomplete?: boolean;
  /** Whether the report is of an invocation (run/resume): then what it spent is shown apart. */
  invocation?: boolean;
}

/**
 * A run's report as GitHub-flavoured Markdown: status and counts, a table per scorer (mean,
 * standard error, samples), the errors by type, the spend, the retries (`retriesText`), and the
 * resume command when the run is incomplete. What `stet export --format markdown` prints and
 * `stet run`/`resume` append to `$GITHUB_STEP_SUMMARY`. Every user-supplied text is escaped.
 *
 * @example markdownSummary(report, { resumeCommand: "stet resume r_1" }).startsWith("### stet run") // true
 */
export function markdownSummary(report: RunReport, options: MarkdownOptions = {}): string {
  const { counts } = report;
  const lines = [
    `### stet run \`${code(report.runId)}\` · ${inline(report.evalName)}`,
    "",
    `**Status:** ${report.status} · ${formatCount(counts.scored)} of ${formatCount(counts.total)} keys scored` +
      limitedNote(report) +
      ` · ${formatCount(counts.errored)} errored · ${formatCount(counts.remaining)} remaining` +
      (options.model === undefined ? "" : ` · model ${inline(options.model)}`),
    "",
    "| scorer | mean | ± stderr | samples |",
    "| --- | ---: | ---: | ---: |",
    ...report.metrics.map(
      (m) =>
        `| ${inline(m.scorer)} | ${m.mean === null ? "–" : m.mean.toFixed(4)} | ` +
        `${m.stderr === null ? "–" : m.stderr.toFixed(4)} | ${formatCount(m.samples)} |`,
    ),
    "",
  ];
  if (report.agreement && report.agreement.length > 0) {
    // How far people (reviews) and each judge agree: see docs/review.md.
    lines.push(
      "| human | scorer | keys | agree | Cohen's κ (95%) |",
      "| --- | --- | ---: | ---: | --- |",
    );
    for (const a of report.agreement) {
      const rate = a.rate === null ? "–" : `${(a.rate * 100).toFixed(1)}%`;
      const kappa =
        a.kappa === null
          ? "–"
          : a.kappa.toFixed(3) +
            (a.interval ? ` (${a.interval.low.toFixed(3)} to ${a.interval.high.toFixed(3)})` : "");
      lines.push(`| ${inline(a.human)} | ${inline(a.scorer)} | ${a.n} | ${rate} | ${kappa} |`);
    }
    lines.push("");
  }
  const errors = Object.entries(report.errorsByType);
  if (errors.length > 0) {
    lines.push("| error type | outcomes |", "| --- | ---: |");
    for (const [type, n] of errors) lines.push(`| ${type} | ${formatCount(n ?? 0)} |`);
    lines.push("");
  }
  const { spentNow, totalSpent, reused } = report.usage;
  lines.push(
    `**Spend:** ${options.invocation ? `${formatCost(spentNow, true)} this invocation · ` : ""}` +
      `${formatCost(totalSpent, true)} in total` +
      (report.stored
        ? reused.attempts > 0
          ? ` · ${formatCost(reused)} imported (${formatCount(reused.attempts)} outcomes paid elsewhere)`
          : ""
        : ` · ${formatCost(reused)} reused (${formatCount(reused.attempts)} outcomes not paid again)`),
    "",
    `**Retries:** ${retriesText(report.retries)}`,
  );
  const incomplete = counts.remaining > 0 || options.incomplete === true;
  if (incomplete && options.resumeCommand !== undefined) {
    lines.push("", "Incomplete; finish it with:", "", "```sh", options.resumeCommand, "```");
  }
  return `${lines.join("\n")}\n`;
}

/**
 * The step summary of a run stopped before it could report (its endpoint failed, its store
 * stayed unwritable): the run, why it stopped, the keys left when known, and the command that
 * finishes it. Every finished sample stands; the command executes only what is left.
 *
 * @example markdownStopped({ runId: "r_1", evalName: "qa", why: "endpoint failed", message: "HTTP 401", resumeCommand: "stet resume r_1" }).includes("stet resume r_1") // true
 */
export function markdownStopped(stop: {
  runId: string;
  evalName: string;
  why: string;
  message: string;
  remaining?: number;
  model?: string;
  resumeCommand?: string;
  /** A command to give before the resume one (`stet import` of a fallback file). */
  importCommand?: string;
}): string {
  const left = stop.remaining === undefined ? "" : ` · ${formatCount(stop.remaining)} keys left`;
  const lines = [
    `### stet run \`${code(stop.runId)}\` · ${inline(stop.evalName)}`,
    "",
    `**Status:** interrupted (${inline(stop.why)})${left}` +
      (stop.model === undefined ? "" : ` · model ${inline(stop.model)}`),
    "",
    `> ${inline(stop.message)}`,
  ];
  if (stop.importCommand !== undefined) {
    lines.push(
      "",
      "Restore the attempts the store could not take:",
      "",
      "```sh",
      stop.importCommand,
      "```",
    );
  }
  if (stop.resumeCommand !== undefined) {
    lines.push("", "Incomplete; finish it with:", "", "```sh", stop.resumeCommand, "```");
  }
  return `${lines.join("\n")}\n`;
}

/** Text inside a table cell or a line: Markdown and HTML specials escaped, one line. */
export function inline(value: string): string {
  return value.replace(/[\\`*_{}[\]()#+\-.!|<>&~]/g, (c) => `\\${c}`).replace(/[\r\n]+/g, " ");
}

/** Text inside a code span: backticks cannot close it early. */
export function code(value: string): string {
  return value.replace(/`/g, "'");
}
