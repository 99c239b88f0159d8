import { runModel } from "../../core/run-model.js";
import type { Json } from "../../core/json.js";
import { stringify } from "csv-stringify/sync";
import { StetError } from "../../core/errors.js";
import type { Attempt, Run, Usage, UsageFigures } from "../../core/types.js";
import { outcomePages } from "../../evalport/outcome-pages.js";
import { prepareResultSet, writeResultSet } from "../../evalport/write-result-set.js";
import { csvColumns, csvRow, type CsvColumn } from "../export-csv.js";
import { reviewCells, reviewColumns, reviewScorers } from "../export-reviews.js";
import { toOutput, type Write } from "../export-output.js";
import { openStore } from "../open-store.js";
import { htmlReport } from "../reports/html.js";
import { writeJunit } from "../reports/junit.js";
import { markdownSummary } from "../reports/markdown.js";
import { gatherHtml } from "../reports/report-data.js";
import { resumeHint } from "../resume-hint.js";
import { readRun } from "../../runs/read-run.js";
import type { Store } from "../../store/types.js";
import { trajectoryUsage } from "../../core/usage.js";

export interface ExportFlags {
  store?: string;
  format?: string;
  output?: string;
  /** junit/html: a score below this fails (default 1). */
  passThreshold?: number;
}

const FORMATS = ["jsonl", "csv", "resultset", "junit", "html", "markdown"];
/** The formats rendered from the run's report (`stet show`'s figures) and its keys. */
const REPORTS = ["junit", "html", "markdown"];

/**
 * `stet export <run-id>`: one row per key's current outcome, sorted by sample id (in byte order)
 * and epoch, so the same stored attempts always export as the same bytes. `--format resultset`
 * writes the EvalPort ResultSet (`writeResultSet`). `--format csv` has a column per scorer
 * (`csvColumns`). `--format junit`, `html` and `markdown` render the run's report and outcomes
 * (`stet show`'s figures) for CI and for people; see src/cli/reports/. Every format streams: the
 * run's outcomes, journals and reviews are read a page at a time in key order
 * (`outcomePages`) and written as they come, so memory does not grow with the run (an HTML
 * report over `HTML_ROW_LIMIT` keys is a summary of its worst ones).
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
    if (REPORTS.includes(format)) {
      await exportReport(store, runId, format, flags);
      return 0;
    }
    const run = await store.runs.get(runId);
    if (!run)
      throw new StetError("E_RUN_NOT_FOUND", `no run with id "${runId}" in ${store.location}`);
    if (format === "resultset") {
      // The first pass refuses a run without outcomes before any file is touched.
      const coverage = await prepareResultSet(store, run);
      await toOutput(output, (write) => writeResultSet(store, coverage, write));
    } else if (format === "jsonl") {
      await toOutput(output, (write) => writeJsonl(store, run, write));
    } else {
      const humans = await reviewedScorers(store, run);
      await toOutput(output, (write) => writeCsv(store, run, humans, write));
    }
    return 0;
  } finally {
    await store.close();
  }
}

/** One line per key's outcome, with its journal and current reviews, a page at a time. */
async function writeJsonl(store: Store, run: Run, write: Write): Promise<void> {
  const pages = outcomePages(store, run.id, "whole", { journal: true, reviews: true });
  for await (const page of pages) {
    let text = "";
    for (const { outcomes } of page.samples) {
      for (const a of outcomes) {
        const row = exportRow(a, page.journalOf(a), page.reviewsOf(a));
        text += `${JSON.stringify(row)}\n`;
      }
    }
    if (text !== "") await write(text);
  }
}

/**
 * The human scorers with a current review of some outcome (one CSV column each): a pass over
 * the outcomes' heads and reviews, skipped when the run has no review at all.
 */
async function reviewedScorers(store: Store, run: Run): Promise<string[]> {
  if ((await store.reviews.list(run.id, { limit: 1 })).length === 0) return [];
  const rows: Json[][] = [];
  const names = new Set<string>();
  for await (const page of outcomePages(store, run.id, "heads", { reviews: true })) {
    for (const { outcomes } of page.samples) {
      for (const a of outcomes) {
        const reviews = page.reviewsOf(a);
        if (reviews) rows.push(reviews);
      }
    }
    for (const name of reviewScorers(rows.splice(0))) names.add(name);
  }
  return [...names].sort();
}

/** The CSV export: its header, then each page's rows (`csvRow`, and the review cells). */
async function writeCsv(store: Store, run: Run, humans: string[], write: Write): Promise<void> {
  const { scorers } = run.config;
  const columns: CsvColumn[] = [...csvColumns(scorers), ...reviewColumns(humans)];
  await write(stringify([], { header: true, columns }));
  const pages = outcomePages(store, run.id, "whole", { samples: "whole", reviews: true });
  for await (const page of pages) {
    const byId = new Map(
      page.samples.flatMap((s) =>
        s.sample.record ? ([[s.sample.id, s.sample.record]] as const) : [],
      ),
    );
    const rows = page.samples.flatMap(({ outcomes }) =>
      outcomes.map((a) => ({
        ...csvRow(a, byId, scorers),
        ...reviewCells(humans, page.reviewsOf(a)),
      })),
    );
    if (rows.length > 0) await write(stringify(rows, { header: false, columns }));
  }
}

/** A human-facing export of the run: JUnit XML, a self-contained HTML page, or Markdown. */
async function exportReport(
  store: Store,
  runId: string,
  format: string,
  flags: ExportFlags,
): Promise<void> {
  const { run, report } = await readRun(store, runId);
  const threshold = flags.passThreshold ?? 1;
  if (format === "junit") {
    const pages = async function* (attempts: "whole" | "heads") {
      const read =
        attempts === "whole"
          ? outcomePages(store, runId, "whole")
          : outcomePages(store, runId, "heads");
      for await (const page of read) yield page.samples;
    };
    await toOutput(flags.output, (write) => writeJunit(run, report, pages, threshold, write));
    return;
  }
  if (format === "html") {
    const pages = async function* () {
      for await (const page of outcomePages(store, runId, "whole", { samples: "whole" })) {
        yield page.samples;
      }
    };
    const page = htmlReport(await gatherHtml(run, report, pages(), threshold), threshold);
    await toOutput(flags.output, (write) => write(page));
    return;
  }
  const model = runModel(run.config);
  const text = markdownSummary(report, {
    ...(model === undefined ? {} : { model }),
    resumeCommand: resumeHint(runId, flags.store).command,
  });
  await toOutput(flags.output, (write) => write(text));
}

/**
 * The export form of an outcome: stable field order, no store internals. A member that does not
 * apply is undefined, which leaves it out of the JSON line (`JSON.stringify`) without a spread
 * per optional member.
 */
export function exportRow(a: Attempt, journal?: Json[], reviews?: Json[]) {
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
    retries: a.retries,
    // Only on an attempt a per-sample limit ended: which limit, its value and what was used.
    limit: a.limit,
    startedAt: a.startedAt,
    completedAt: a.completedAt,
    durationMs: a.durationMs,
    error: a.error,
    provenance: a.provenance.kind,
    // Where an imported or reused outcome came from (`run:<id>#<attempt>` for a reused one).
    source: a.provenance.kind === "imported" ? a.provenance.source : undefined,
    redacted: a.redacted,
    // The attempt's step journal (ctx.step / ctx.chat): its trajectory, when it has one.
    journal,
    // Its current reviews, when it has any.
    reviews,
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
