import { renderAgreement } from "./agreement.js";
import type { RateWaits } from "../../core/rate-limits.js";
import type { PlanSummary, RunReport } from "../../core/events.js";
import type { ErrorGroup, RetryTotals } from "../../core/outcome-fold.js";
import type { ReuseSummary } from "../../core/reuse-plan.js";
import {
  formatCost,
  formatCount,
  formatDuration,
  formatKey,
  formatTokens,
  table,
} from "./format.js";

/** The plan a resume prints before executing anything. */
export function renderPlan(plan: PlanSummary): string {
  const lines = [
    `plan: ${formatCount(plan.preserved)} preserved · ${formatCount(plan.toExecute)} to execute ` +
      `(${plan.neverStarted} never started, ${plan.interrupted} interrupted, ${plan.errored} errored` +
      `${plan.changedKeys > 0 ? `, ${plan.changedKeys} changed` : ""}` +
      `${plan.rerun > 0 ? `, ${plan.rerun} re-run on request` : ""}) · ${plan.changed.length} changed`,
  ];
  if (plan.toRescore > 0) {
    lines.push(
      `      ${formatCount(plan.toRescore)} scorer error(s) to score again: their outputs stand, no solver call`,
    );
  }
  if (plan.erroredKept > 0)
    lines.push(`      ${plan.erroredKept} errored keys kept (--no-rerun-errors)`);
  if (plan.changed.length > 0)
    lines.push(`      changed samples: ${plan.changed.slice(0, 10).join(", ")}`);
  if (plan.missing.length > 0) {
    lines.push(
      `      ${plan.missing.length} sample(s) no longer in the dataset run from the run's copy`,
    );
  }
  return lines.join("\n");
}

/**
 * What a run started with `--reuse` took from where, and why the other keys were not reused, one
 * line per reason with its count.
 *
 * @example renderReuse({ source: "r_a", requested: "latest", reused: 174, rescored: 0, notReused: [{ reason: "new sample", keys: 10 }] })
 * // ["reuse    174 keys reused from run r_a · 10 not reused:", "           10  new sample"]
 */
export function renderReuse(reuse: ReuseSummary): string[] {
  const from =
    reuse.source === null
      ? `(no source run for --reuse ${reuse.requested})`
      : `from run ${reuse.source}`;
  const rescored =
    reuse.rescored > 0 ? ` (${formatCount(reuse.rescored)} scored again by new scorers)` : "";
  const missed = reuse.notReused.reduce((sum, group) => sum + group.keys, 0);
  return [
    `reuse    ${formatCount(reuse.reused)} keys reused ${from}${rescored}` +
      (missed > 0 ? ` · ${formatCount(missed)} not reused:` : ""),
    ...reuse.notReused.map(
      (group) => `         ${formatCount(group.keys).padStart(6)}  ${group.reason}`,
    ),
  ];
}

/** The end-of-run summary: metrics per scorer, counts, tokens, cost split, retries, timing. */
export function renderSummary(report: RunReport): string {
  const rows = [
    ["scorer", "mean", "± stderr", "samples"],
    ...report.metrics.map((m) => [
      m.scorer,
      m.mean === null ? "-" : m.mean.toFixed(4),
      m.stderr === null ? "-" : m.stderr.toFixed(4),
      formatCount(m.samples),
    ]),
  ];
  const { counts, usage } = report;
  const errors = Object.entries(report.errorsByType)
    .map(([type, n]) => `${type} ${n}`)
    .join(", ");
  const tokens = usage.totalSpent;
  return [
    table(rows, [false, true, true, true]),
    ...(report.agreement?.length ? renderAgreement(report.agreement) : []),
    "",
    `keys     ${formatCount(counts.total)} total · ${formatCount(counts.scored)} scored${limitedNote(report)} · ` +
      `${formatCount(counts.errored)} errored${errors ? ` (${errors})` : ""} · ${formatCount(counts.remaining)} remaining`,
    ...report.errors.map((group, i) => `${i === 0 ? "errors" : "      "}   ${renderErrors(group)}`),
    `work     ${formatCount(report.executed)} executed now · ` +
      `${report.rescored > 0 ? `${formatCount(report.rescored)} rescored now · ` : ""}` +
      `${formatCount(report.preserved)} preserved`,
    ...(report.reuse ? renderReuse(report.reuse) : []),
    `tokens   ${formatTokens(tokens)} (all attempts)`,
    costLine(report) +
      (usage.byOtherWorkers
        ? ` · ${formatCost(usage.byOtherWorkers, true)} by the run's other workers`
        : ""),
    ...(unpriced(report)
      ? [
          "         (no price is known for the model, or for a tier it used such as cached input: give the solver or judge `prices` to count its cost)",
        ]
      : []),
    renderRetries(report.retries),
    ...(report.rateLimits ?? []).map(renderRateLimit),
    ...(report.journal
      ? [
          `journal  ${formatCount(report.journal.replayed)} steps replayed · ` +
            `${formatCount(report.journal.diverged)} diverged · ` +
            `${formatCount(report.journal.reused.inputTokens + report.journal.reused.outputTokens)} tokens, ` +
            `${formatCost(report.journal.reused, true)} reused from earlier executions`,
        ]
      : []),
    `time     ${formatDuration(report.wallMs)}`,
    `status   ${report.status}`,
  ].join("\n");
}

/**
 * The run's retries line: `retries  ` then `retriesText`.
 *
 * @example renderRetries({ total: 129, keysRetried: 3, unrecorded: 0 })
 * // "retries  129 requests re-sent (all attempts) · 3 keys needed more than one attempt"
 */
export function renderRetries(retries: RetryTotals): string {
  return `retries  ${retriesText(retries)}`;
}

/**
 * The run's retries in words, as the summary, the Markdown and the HTML reports say them:
 * requests re-sent over every stored attempt and scoring, keys that needed another attempt, and
 * attempts stored before retries were counted (unknown).
 *
 * @example retriesText({ total: 1, keysRetried: 0, unrecorded: 2 })
 * // "1 request re-sent (all attempts) · 0 keys needed more than one attempt · 2 attempts stored before retries were counted"
 */
export function retriesText(retries: RetryTotals): string {
  const { total, keysRetried, unrecorded } = retries;
  return (
    `${formatCount(total)} request${total === 1 ? "" : "s"} re-sent (all attempts) · ` +
    `${formatCount(keysRetried)} key${keysRetried === 1 ? "" : "s"} needed more than one attempt` +
    (unrecorded > 0
      ? ` · ${formatCount(unrecorded)} attempt${unrecorded === 1 ? "" : "s"} stored before retries were counted`
      : "")
  );
}

function unpriced({ usage }: RunReport): boolean {
  return usage.spentNow.unpriced + usage.totalSpent.unpriced + usage.reused.unpriced > 0;
}

/**
 * The scored keys a per-sample limit ended, by limit: " (3 limited: costUsd 2, turns 1)", or "".
 *
 * @example limitedNote(report) // " (2 limited: costUsd 2)"
 */
export function limitedNote(report: Pick<RunReport, "counts" | "limitedBy">): string {
  const limited = report.counts.limited ?? 0;
  if (limited === 0) return "";
  const by = Object.entries(report.limitedBy ?? {})
    .map(([name, n]) => `${name} ${n}`)
    .join(", ");
  return ` (${formatCount(limited)} limited${by ? `: ${by}` : ""})`;
}

/**
 * One error type's line: its count, the first errored keys with their messages, and how many
 * more. A key of a later epoch is shown as `id#epoch`.
 *
 * @example renderErrors({ type: "solver", count: 4, examples: [{ sampleId: "s3", epoch: 1, message: "tool failed" }] })
 * // "solver 4 — s3: tool failed; … and 3 more"
 */
export function renderErrors(group: ErrorGroup): string {
  const quoted = group.examples.map((e) => `${formatKey(e)}: ${e.message}`);
  const more = group.count - group.examples.length;
  if (more > 0) quoted.push(`… and ${formatCount(more)} more`);
  return `${group.type} ${formatCount(group.count)} — ${quoted.join("; ")}`;
}

/**
 * What the run cost, as the report's point of view allows: an invocation's spend now, the run's
 * total and what it reused (did not buy again); a stored report's total, and the outcomes it
 * imported (paid elsewhere) when it has any. A report from the store never calls the run's own
 * spend "reused".
 */
function costLine({ usage, stored }: RunReport): string {
  if (stored)
    return (
      `cost     ${formatCost(usage.totalSpent, true)} spent on this run (every invocation)` +
      (usage.reused.attempts > 0
        ? ` · ${formatCost(usage.reused, true)} imported (paid elsewhere, not re-bought)`
        : "")
    );
  return (
    `cost     ${formatCost(usage.spentNow, true)} spent now · ${formatCost(usage.totalSpent, true)} ` +
    `total on this run · ${formatCost(usage.reused, true)} reused (not re-bought)`
  );
}

/**
 * One endpoint's rate-limit line: requests, those that waited, 429s received, time waiting.
 *
 * @example renderRateLimit({ endpoint: "openai:m@https://api.openai.com/v1", requests: 10, throttled: 4, rejected: 1, waitMs: 2500 })
 * // "rate     openai:m@https://api.openai.com/v1: 10 requests · 4 throttled · 1 429 · 2.5s waiting"
 */
export function renderRateLimit(w: RateWaits): string {
  return (
    `rate     ${w.endpoint}: ${formatCount(w.requests)} requests · ${formatCount(w.throttled)} throttled · ` +
    `${formatCount(w.rejected)} 429 · ${formatDuration(w.waitMs)} waiting`
  );
}
