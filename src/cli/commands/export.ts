import { runModel } from "../../core/run-model.js";
import type { Json } from "../../core/json.js";
import { createWriteStream } from "node:fs";
import { once } from "node:events";
import { open, rename, rm } from "node:fs/promises";
import { dirname } from "node:path";
import { stringify } from "csv-stringify";
import { StetError } from "../../core/errors.js";
import type { Attempt, Usage, UsageFigures } from "../../core/types.js";
import { buildResultSet, loadOutcomes } from "../../evalport/build-result-set.js";
import { loadTrajectories } from "../../evalport/trajectory.js";
import { syncDirectory, writeFileAtomic } from "../../durable/write-file-atomic.js";
import { csvColumns, csvRow } from "../export-csv.js";
import { reviewCells, reviewColumns, reviewScorers } from "../export-reviews.js";
import { applyReviews } from "../../evalport/review-grades.js";
import { openStore } from "../open-store.js";
import { htmlReport } from "../reports/html.js";
import { junitXml } from "../reports/junit.js";
import { markdownSummary } from "../reports/markdown.js";
import { loadReportData } from "../reports/report-data.js";
import { resumeHint } from "../resume-hint.js";
import type { Store } from "../../store/types.js";
import { prepareOutputFile } from "../output-file.js";
import { trajectoryUsage } from "../../core/usage.js";

export interface ExportFlags {
  store?: string;
  format?: string;
  output?: string;
  /** junit/html: a score below this fails (default 1). */
  passThreshold?: number;
}

const FORMATS = ["jsonl", "csv", "resultset", "junit", "html", "markdown"];
/** The formats rendered whole from the run's report and outcomes (`loadReportData`). */
const REPORTS = ["junit", "html", "markdown"];

/**
 * `stet export <run-id>`: one row per key's current outcome, sorted by sample id and epoch, so
 * the same stored attempts always export as the same bytes. `--format resultset` writes the
 * EvalPort ResultSet (`buildResultSet`). `--format csv` has a column per scorer (`csvColumns`).
 * `--format junit`, `html` and `markdown` render the run's report and outcomes (`stet show`'s
 * figures) for CI and for people; see src/cli/reports/.
 * `-o` replaces the file atomically (temp + rename), creating its folder when missing.
 */
export async function exportCommand(runId: string, flags: ExportFlags): Promise<number> {
  const format = flags.format ?? "jsonl";
  if (!FORMATS.includes(format)) {
    throw new StetError(
      "E_USAGE",
      `unknown export format "${format}" (expected jsonl, csv, resultset, junit, html or markdown)`,
    );
  }
  // `-o ""` is refused by prepareOutputFile, not taken for stdout.
  const output = flags.output;
  const store = await openStore(flags.store, { create: false });
  try {
    if (format === "resultset" || REPORTS.includes(format)) {
      const text =
        format === "resultset"
          ? `${JSON.stringify(await buildResultSet(store, runId), null, 2)}\n`
          : await renderReport(store, runId, format, flags);
      if (output !== undefined) {
        await prepareOutputFile(output, "-o");
        await writeFileAtomic(output, text);
      } else if (!process.stdout.write(text)) await once(process.stdout, "drain");
      return 0;
    }
    const loaded = await loadOutcomes(store, runId);
    const { run, samples } = loaded;
    // People's reviews: each row carries its key's current ones (reviewer, value, note, time).
    const reviewed = applyReviews(loaded.outcomes, await store.reviews.list(runId));
    const outcomes = reviewed.outcomes;
    if (output !== undefined) await prepareOutputFile(output, "-o");
    const temp = output === undefined ? undefined : `${output}.${process.pid}.tmp`;
    const out = temp === undefined ? process.stdout : createWriteStream(temp);
    try {
      if (format === "jsonl") {
        const journal = await loadTrajectories(store, runId);
        for (const a of outcomes) {
          const reviews = reviewed.reviewsOf(a);
          const row = JSON.stringify({ ...exportRow(a, journal(a)), ...(reviews && { reviews }) });
          if (!out.write(`${row}\n`)) await once(out, "drain");
        }
      } else {
        const { scorers } = run.config;
        const humans = reviewScorers(outcomes.map((a) => reviewed.reviewsOf(a)));
        const columns = [...csvColumns(scorers), ...reviewColumns(humans)];
        const csv = stringify({ header: true, columns });
        csv.pipe(out, { end: false });
        const byId = new Map(samples.map((r) => [r.sample.id, r]));
        for (const a of outcomes) {
          const reviews = reviewed.reviewsOf(a);
          csv.write({ ...csvRow(a, byId, scorers), ...reviewCells(humans, reviews) });
        }
        csv.end();
        await once(csv, "end");
      }
      if (temp !== undefined && output !== undefined) {
        out.end();
        await once(out, "finish");
        await fsyncFile(temp);
        await rename(temp, output);
        syncDirectory(dirname(output));
      }
    } finally {
      if (temp !== undefined) await rm(temp, { force: true });
    }
    return 0;
  } finally {
    await store.close();
  }
}

/** A human-facing export of the run: JUnit XML, a self-contained HTML page, or Markdown. */
async function renderReport(
  store: Store,
  runId: string,
  format: string,
  flags: ExportFlags,
): Promise<string> {
  const data = await loadReportData(store, runId);
  const threshold = flags.passThreshold ?? 1;
  if (format === "junit") return junitXml(data, threshold);
  if (format === "html") return htmlReport(data, threshold);
  const model = runModel(data.run.config);
  return markdownSummary(data.report, {
    ...(model === undefined ? {} : { model }),
    resumeCommand: resumeHint(runId, flags.store).command,
  });
}

async function fsyncFile(path: string): Promise<void> {
  const handle = await open(path, "r+");
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/** The export form of an outcome: stable field order, no store internals. */
export function exportRow(a: Attempt, journal?: Json[]) {
  return {
    runId: a.runId,
    sampleId: a.sampleId,
    epoch: a.epoch,
    attempt: a.attempt,
    status: a.status,
    output: a.output,
    scores: a.scores,
    usage: exportUsage(a.usage),
    // Absent when unknown (stored before retries were counted): an old run exports as before.
    ...(a.retries === undefined ? {} : { retries: a.retries }),
    // Only on an attempt a per-sample limit ended: which limit, its value and what was used.
    ...(a.limit === undefined ? {} : { limit: a.limit }),
    startedAt: a.startedAt,
    completedAt: a.completedAt,
    durationMs: a.durationMs,
    error: a.error,
    provenance: a.provenance.kind,
    // Where an imported or reused outcome came from (`run:<id>#<attempt>` for a reused one).
    ...(a.provenance.kind === "imported" ? { source: a.provenance.source } : {}),
    ...(a.redacted === undefined ? {} : { redacted: a.redacted }),
    // The attempt's step journal (ctx.step / ctx.chat): its trajectory, when it has one.
    ...(journal === undefined ? {} : { journal }),
  };
}

/**
 * An attempt's usage as exported: a cost that was never known is `costUsd: null`, not absent; the
 * cached, cache-write and reasoning tokens (of the input and output) when the provider reported
 * them; `reused`, the part replayed from the journal, when the attempt replayed any.
 */
function exportUsage(usage: Usage | null) {
  if (usage === null) return null;
  // The whole trajectory: the calls carried from an errored attempt count as replayed.
  const { reused, carried: _carried, ...figures } = trajectoryUsage(usage);
  return {
    ...exportFigures(figures),
    ...(reused === undefined ? {} : { reused: exportFigures(reused) }),
  };
}

function exportFigures(usage: UsageFigures) {
  return {
    inputTokens: usage.inputTokens,
    outputTokens: usage.outputTokens,
    ...(usage.cachedInputTokens === undefined
      ? {}
      : { cachedInputTokens: usage.cachedInputTokens }),
    ...(usage.cacheWriteTokens === undefined ? {} : { cacheWriteTokens: usage.cacheWriteTokens }),
    ...(usage.reasoningTokens === undefined ? {} : { reasoningTokens: usage.reasoningTokens }),
    costUsd: usage.costUsd ?? null,
  };
}
