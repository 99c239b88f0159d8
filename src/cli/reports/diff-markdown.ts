import { formatLabels } from "../../core/labels.js";
import type { Json } from "../../core/json.js";
import type { BaselineComparison, RegressedExample } from "../../runs/baseline-diff.js";
import { DIFF_ALPHA, type ScorerDiff } from "../../runs/diff-runs.js";
import { formatCost, formatCount } from "../render/format.js";
import { code, inline } from "./markdown.js";

/** How many characters of an input or output a regressed sample's row shows. */
const SHOWN = 80;

/**
 * A run's comparison with its baseline as GitHub-flavoured Markdown, ready for a PR comment or a
 * step summary: the verdict per scorer (delta, 95 % interval, p-value), which baseline was
 * chosen (its labels and its age relative to the run's creation, never the clock, so the same
 * stores give the same bytes), both runs' spend, what changed since the baseline, and the first
 * regressed samples with their inputs and outputs abbreviated. Every user-supplied text is
 * escaped.
 *
 * @example diffMarkdown(comparison).startsWith("### stet diff") // true
 */
export function diffMarkdown(c: BaselineComparison): string {
  const { diff, baseline, target } = c;
  const regressed = diff.scorers.some((s) => s.significantRegression);
  const lines = [
    `### stet diff · ${inline(target.evalName)} · ${regressed ? "regression" : "no significant regression"}`,
    "",
    `**Run** \`${code(target.id)}\` (${inline(formatLabels(target.labels))}) compared with ` +
      `**baseline** \`${code(baseline.run.id)}\` (${inline(formatLabels(baseline.run.labels))}), ` +
      `${formatAge(baseline.ageMs)}, chosen by \`${code(baseline.selector)}\`.`,
    "",
  ];
  if (c.common) {
    lines.push(
      `Compared on the samples both runs have (--common): ${formatCount(diff.onlyInA.length)} only in the baseline, ` +
        `${formatCount(diff.onlyInB.length)} only in this run, ${formatCount(diff.changed.length)} changed, left out.`,
      "",
    );
  }
  lines.push(
    "| scorer | verdict | baseline | this run | delta | 95% interval | p | samples |",
    "| --- | --- | ---: | ---: | ---: | --- | ---: | ---: |",
    ...diff.scorers.map(scorerRow),
    "",
    `**Spend:** baseline ${formatCost(c.spend.baseline, true)} · this run ${formatCost(c.spend.run, true)}`,
  );
  if (baseline.changes.length > 0) {
    lines.push("", "**Changed since the baseline:**", "");
    for (const change of baseline.changes) lines.push(`- ${inline(change)}`);
  }
  for (const s of diff.scorers) {
    const examples = c.examples[s.scorer] ?? [];
    if (examples.length === 0) continue;
    const more = s.regressedIds.length - examples.length;
    lines.push(
      "",
      `<details><summary>Regressed samples (${inline(s.scorer)}): ${formatCount(s.regressedIds.length)}</summary>`,
      "",
      "| sample | input | target | baseline output | this run's output |",
      "| --- | --- | --- | --- | --- |",
      ...examples.map(exampleRow),
      ...(more > 0 ? ["", `… and ${formatCount(more)} more (\`stet diff --json\`).`] : []),
      "",
      "</details>",
    );
  }
  return `${lines.join("\n")}\n`;
}

function scorerRow(s: ScorerDiff): string {
  const num = (v: number | null) => (v === null ? "–" : v.toFixed(3));
  const signed = (v: number | null) => (v === null ? "–" : `${v > 0 ? "+" : ""}${v.toFixed(3)}`);
  const none = s.paired === 0;
  const p = none ? "–" : s.pValue < 0.0001 ? s.pValue.toExponential(2) : s.pValue.toFixed(4);
  return (
    `| ${inline(s.scorer)} | ${verdict(s)} | ${num(s.meanA)} | ${num(s.meanB)} | ${signed(s.delta)} | ` +
    `${s.ciLow === null ? "–" : `[${signed(s.ciLow)}, ${signed(s.ciHigh)}]`} | ${p} | ${formatCount(s.paired)} |`
  );
}

function verdict(s: ScorerDiff): string {
  if (s.paired === 0) return "no pairs";
  if (s.significantRegression) return "❌ regressed";
  if ((s.delta ?? 0) > 0 && s.pValue < DIFF_ALPHA) return "✅ improved";
  return "no significant change";
}

function exampleRow(e: RegressedExample): string {
  return `| \`${code(e.sampleId)}\` | ${cell(e.input)} | ${cell(e.target)} | ${cell(e.baseline)} | ${cell(e.run)} |`;
}

/** A JSON value in a table cell: a string as it is, anything else as JSON, cut to `SHOWN`. */
function cell(value: Json | null): string {
  if (value === null) return "–";
  const text = typeof value === "string" ? value : JSON.stringify(value);
  const cut = text.length > SHOWN ? `${text.slice(0, SHOWN - 1)}…` : text;
  return inline(cut);
}

/**
 * How much older the baseline is than the run (`ageMs`: the run's creation minus the
 * baseline's), in the two largest units.
 *
 * @example formatAge(3 * 3_600_000 + 120_000) // "3 h 2 min older"
 */
export function formatAge(ageMs: number): string {
  const s = Math.floor(Math.abs(ageMs) / 1000);
  const units: [string, number][] = [
    ["d", 86_400],
    ["h", 3600],
    ["min", 60],
    ["s", 1],
  ];
  const parts: string[] = [];
  let rest = s;
  for (const [name, size] of units) {
    const n = Math.floor(rest / size);
    rest -= n * size;
    if (n > 0 || (parts.length > 0 && parts.length < 2)) parts.push(`${n} ${name}`);
    if (parts.length === 2) break;
  }
  const span = parts.length === 0 ? "0 s" : parts.join(" ");
  return ageMs < 0 ? `${span} newer` : `${span} older`;
}
