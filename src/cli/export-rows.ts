import { stringify } from "csv-stringify/sync";
import type { Json } from "../core/json.js";
import type { Attempt, Usage, UsageFigures } from "../core/types.js";
import { trajectoryUsage } from "../core/usage.js";
import {
  outcomePages,
  type OutcomePage,
  type OutcomePagesOptions,
} from "../evalport/outcome-pages.js";
import type { RunPart, Store } from "../store/types.js";
import { csvColumns, csvRow, type CsvColumn } from "./export-csv.js";
import { reviewCells, reviewColumns } from "./export-reviews.js";

/**
 * A row format of `stet export`: a JSON line per outcome (with its journal and reviews), or a CSV
 * row (a column per scorer of the run and per human scorer with a review). What the text of a
 * page of outcomes is made from, in this thread or in an export's reader threads
 * (`export-worker.ts`), so both write the same bytes.
 */
export type RowFormat =
  { name: "jsonl" } | { name: "csv"; scorers: readonly string[]; humans: readonly string[] };

/** What a format reads of each page (`outcomePages`' options). */
function rowReads(format: RowFormat): OutcomePagesOptions {
  return format.name === "jsonl"
    ? { journal: true, reviews: true }
    : { samples: "whole", reviews: true };
}

/**
 * The rows of the run's outcomes in the format, a page's text at a time (pages without an
 * outcome give none): of the whole run, or of a `part` of it (`RunPart`).
 *
 * @example for await (const text of rowTexts(store, run.id, { name: "jsonl" })) await write(text);
 */
export async function* rowTexts(
  store: Store,
  runId: string,
  format: RowFormat,
  part?: RunPart,
): AsyncIterable<string> {
  const reads = { ...rowReads(format), ...(part === undefined ? {} : { part }) };
  for await (const page of outcomePages(store, runId, "whole", reads)) {
    const text = pageRows(format, page);
    if (text !== "") yield text;
  }
}

/** The text before the first row: the CSV header, nothing for JSON lines. */
export function rowsHeader(format: RowFormat): string {
  return format.name === "jsonl"
    ? ""
    : stringify([], { header: true, columns: allColumns(format) });
}

/** The text of a page's outcomes in the format ("" for a page without any). */
function pageRows(format: RowFormat, page: OutcomePage<Attempt>): string {
  if (format.name === "jsonl") {
    let text = "";
    for (const { outcomes } of page.samples) {
      for (const a of outcomes) {
        text += `${JSON.stringify(exportRow(a, page.journalOf(a), page.reviewsOf(a)))}\n`;
      }
    }
    return text;
  }
  const byId = new Map(
    page.samples.flatMap((s) =>
      s.sample.record ? ([[s.sample.id, s.sample.record]] as const) : [],
    ),
  );
  const rows = page.samples.flatMap(({ outcomes }) =>
    outcomes.map((a) => ({
      ...csvRow(a, byId, format.scorers),
      ...reviewCells(format.humans, page.reviewsOf(a)),
    })),
  );
  return rows.length === 0 ? "" : stringify(rows, { header: false, columns: allColumns(format) });
}

/** The CSV columns: the scorers', then the human scorers' review columns. */
function allColumns(format: Extract<RowFormat, { name: "csv" }>): CsvColumn[] {
  return [...csvColumns(format.scorers), ...reviewColumns(format.humans)];
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
