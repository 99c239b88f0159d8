import { runModel } from "../../core/run-model.js";
import { StetError } from "../../core/errors.js";
import type { Json } from "../../core/json.js";
import type { Run } from "../../core/types.js";
import { outcomePages } from "../../evalport/outcome-pages.js";
import { prepareResultSet, writeResultSet } from "../../evalport/write-result-set.js";
import { reviewScorers } from "../export-reviews.js";
import { toOutput } from "../export-output.js";
import type { RowFormat } from "../export-rows.js";
import { openStore } from "../open-store.js";
import { exportThreads, writeRows } from "../parallel-export.js";
import { htmlReport } from "../reports/html.js";
import { writeJunit } from "../reports/junit.js";
import { markdownSummary } from "../reports/markdown.js";
import { gatherHtml } from "../reports/report-data.js";
import { resumeHint } from "../resume-hint.js";
import { readRun } from "../../runs/read-run.js";
import type { Store } from "../../store/types.js";

export interface ExportFlags {
  store?: string;
  format?: string;
  output?: string;
  /** junit/html: a score below this fails (default 1). */
  passThreshold?: number;
  /** jsonl/csv: reader threads (`exportThreads`' default when absent). */
  threads?: number;
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
 * `-o` replaces the file atomically (temp + rename), creating its folder when missing. JSON lines
 * and CSV of a large run are read by several threads (`writeRows`), written in the same order.
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
    } else {
      const rows: RowFormat =
        format === "jsonl"
          ? { name: "jsonl" }
          : { name: "csv", scorers: run.config.scorers, humans: await reviewedScorers(store, run) };
      const threads = exportThreads(run, flags.threads);
      await toOutput(output, (write) =>
        writeRows(store, run, rows, write, { threads, storeFlag: flags.store }),
      );
    }
    return 0;
  } finally {
    await store.close();
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
