import { diffRuns, type RunDiff } from "../../runs/diff-runs.js";
import { isStetError, StetError } from "../../core/errors.js";
import { EXIT } from "../exit-codes.js";
import { createIo, type Io } from "../io.js";
import { openStore } from "../open-store.js";
import { table } from "../render/format.js";
import { formatLabels } from "../../core/labels.js";
import { parseBaselineSelector } from "../../runs/baseline.js";
import { compareWithBaseline, type BaselineComparison } from "../../runs/baseline-diff.js";
import { diffMarkdown, formatAge } from "../reports/diff-markdown.js";
import { appendStepSummary } from "../step-summary.js";

/** How many regressed sample ids the text output lists per scorer (`--json` lists all). */
const REGRESSED_SHOWN = 10;

/** `stet diff`'s flags. */
export interface DiffFlags {
  store?: string;
  json?: boolean;
  failOnRegression?: boolean;
  allowDifferentEvals?: boolean;
  /** `--baseline <selector>` (repeatable): compare the one run given with the baseline it picks. */
  baseline?: string[];
  /** With `--baseline`: compare on the samples both runs have, though their samples differ. */
  common?: boolean;
  /** `text` (default) or `markdown`. */
  format?: string;
}

/**
 * `stet diff <run-a> <run-b>`: the paired comparison of two runs per common scorer (B against
 * A); `stet diff --baseline <selector> <run>`: the run against the baseline the selector picks
 * (see `findBaseline`). With `--fail-on-regression`, exit 4 when a scorer regressed significantly
 * (p < 0.05). With `--baseline`, `--format markdown` prints the comment-ready report, which is
 * appended to `$GITHUB_STEP_SUMMARY` too when that is set, whatever the format.
 */
export async function diffCommand(
  runA: string,
  runB: string | undefined,
  flags: DiffFlags,
): Promise<number> {
  const format = diffFormat(flags);
  if (flags.baseline !== undefined) return baselineDiff(runA, runB, flags, format);
  if (runB === undefined)
    throw new StetError(
      "E_USAGE",
      "stet diff takes two runs (<run-a> <run-b>), or one with --baseline <selector>",
    );
  if (flags.common || format === "markdown")
    throw new StetError(
      "E_USAGE",
      `${flags.common ? "--common" : "--format markdown"} goes with --baseline <selector> <run>`,
    );
  const io = createIo(flags.json ?? false);
  const store = await openStore(flags.store, { create: false });
  let diff: RunDiff;
  try {
    diff = await diffRuns(store, runA, runB, {
      allowDifferentEvals: flags.allowDifferentEvals ?? false,
    });
  } catch (error) {
    if (isStetError(error, "E_DIFFERENT_EVALS"))
      throw new StetError(
        error.code,
        `${error.message}; pass --allow-different-evals to compare them anyway`,
      );
    throw error;
  } finally {
    await store.close();
  }
  if (flags.json) io.stdout.write(`${JSON.stringify(diff, null, 2)}\n`);
  else io.say(renderDiff(diff));
  return regressionExit(io, diff, flags);
}

function diffFormat(flags: DiffFlags): "text" | "markdown" {
  const format = flags.format ?? "text";
  if (format !== "text" && format !== "markdown")
    throw new StetError("E_USAGE", `--format ${JSON.stringify(format)}: use text or markdown`);
  if (format === "markdown" && flags.json)
    throw new StetError("E_USAGE", "--format markdown and --json: choose one");
  return format;
}

async function baselineDiff(
  runId: string,
  extra: string | undefined,
  flags: DiffFlags,
  format: "text" | "markdown",
): Promise<number> {
  if (extra !== undefined)
    throw new StetError(
      "E_USAGE",
      `with --baseline, stet diff takes one run (the one to compare): drop ${JSON.stringify(extra)}`,
    );
  if (flags.allowDifferentEvals)
    throw new StetError("E_USAGE", "--allow-different-evals does not go with --baseline");
  const selector = parseBaselineSelector(flags.baseline ?? []);
  const io = createIo(flags.json ?? false);
  const store = await openStore(flags.store, { create: false });
  let comparison: BaselineComparison;
  try {
    comparison = await compareWithBaseline(store, runId, selector, {
      common: flags.common ?? false,
    });
  } finally {
    await store.close();
  }
  const markdown = diffMarkdown(comparison);
  if (flags.json) {
    const { diff, baseline, common, spend } = comparison;
    const { run, ...how } = baseline;
    const chosen = { id: run.id, labels: run.labels, createdAt: run.createdAt, ...how };
    io.stdout.write(`${JSON.stringify({ ...diff, baseline: chosen, common, spend }, null, 2)}\n`);
  } else if (format === "markdown") io.stdout.write(markdown);
  else io.say(`${baselineLine(comparison)}\n${renderDiff(comparison.diff)}`);
  await appendStepSummary(io, markdown);
  return regressionExit(io, comparison.diff, flags);
}

/** Which baseline was chosen, its labels and age, and whether only common samples compare. */
function baselineLine({ baseline, common, diff }: BaselineComparison): string {
  const lines = [
    `baseline ${baseline.run.id} (${formatLabels(baseline.run.labels)}), ${formatAge(baseline.ageMs)}, chosen by ${baseline.selector}`,
  ];
  if (common)
    lines.push(
      `compared on the samples both runs have (--common): ${diff.onlyInA.length} only in the baseline, ${diff.onlyInB.length} only in ${diff.runB}, ${diff.changed.length} changed`,
    );
  if (baseline.changes.length > 0) lines.push(`changed since: ${baseline.changes.join("; ")}`);
  return lines.join("\n");
}

function regressionExit(io: Io, diff: RunDiff, flags: DiffFlags): number {
  const regressed = diff.scorers.filter((s) => s.significantRegression);
  if (flags.failOnRegression && regressed.length > 0) {
    io.stderr.write(
      `significant regression (p < 0.05) on ${regressed.map((s) => s.scorer).join(", ")}\n`,
    );
    return EXIT.belowThreshold;
  }
  return EXIT.ok;
}

/** The comparison as the terminal shows it: one row per scorer, then the regressed samples. */
export function renderDiff(diff: RunDiff): string {
  const num = (v: number | null, digits = 3) => (v === null ? "—" : v.toFixed(digits));
  const signed = (v: number | null) => (v === null ? "—" : `${v > 0 ? "+" : ""}${v.toFixed(3)}`);
  const p = (v: number) => (v < 0.0001 ? v.toExponential(2) : v.toFixed(4));
  const lines = [`diff ${diff.runA} → ${diff.runB}`];
  if (diff.evalA !== diff.evalB)
    lines.push(`different evals: "${diff.evalA}" and "${diff.evalB}" (sample ids may not pair)`);
  if (diff.scorers.length === 0) lines.push("no scorer common to both runs");
  else
    lines.push(
      table(
        [
          ["scorer", "n", "mean A", "mean B", "delta", "95% CI", "p", "test", "+", "−", "="],
          ...diff.scorers.map((s) => [
            s.scorer,
            String(s.paired),
            num(s.meanA),
            num(s.meanB),
            signed(s.delta),
            s.ciLow === null ? "—" : `[${signed(s.ciLow)}, ${signed(s.ciHigh)}]`,
            // No pair, no test: a p-value of an empty comparison would read as evidence.
            s.paired === 0 ? "—" : `${p(s.pValue)}${s.significantRegression ? " *" : ""}`,
            s.paired === 0 ? "—" : s.test,
            String(s.improved),
            String(s.regressed),
            String(s.unchanged),
          ]),
        ],
        [false, true, true, true, true, false, true, false, true, true, true],
      ),
    );
  for (const s of diff.scorers) {
    if (s.regressedIds.length === 0) continue;
    const shown = s.regressedIds.slice(0, REGRESSED_SHOWN).join(", ");
    const more = s.regressedIds.length - REGRESSED_SHOWN;
    lines.push(
      `regressed (${s.scorer}): ${shown}${more > 0 ? ` … and ${more} more (--json)` : ""}`,
    );
  }
  const only = (label: string, ids: string[]) =>
    ids.length > 0 &&
    lines.push(
      `${label}: ${ids.length} (${ids.slice(0, REGRESSED_SHOWN).join(", ")}${ids.length > REGRESSED_SHOWN ? ", …" : ""})`,
    );
  only(`only in ${diff.runA}`, diff.onlyInA);
  only(`only in ${diff.runB}`, diff.onlyInB);
  only("changed content (not paired)", diff.changed);
  if (diff.scorers.some((s) => s.unpaired > 0))
    lines.push(
      `unpaired (no value in one run): ${diff.scorers.map((s) => `${s.scorer} ${s.unpaired}`).join(", ")}`,
    );
  return lines.join("\n");
}
