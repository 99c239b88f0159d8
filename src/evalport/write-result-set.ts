import { StetError } from "../core/errors.js";
import type { Run } from "../core/types.js";
import type { Store } from "../store/types.js";
import { resultSetHeader } from "./build-result-set.js";
import { outcomePages } from "./outcome-pages.js";
import { toResult } from "./result-mapping.js";
import { ResultSummary } from "./summarize-results.js";
import { latestInstant, rfc3339 } from "./timestamps.js";

/** Writes a piece of the output, waiting while the destination is full. */
export type Write = (text: string) => Promise<void>;

/** What a ResultSet's header needs before its results: found by `prepareResultSet`'s pass. */
export interface ResultSetCoverage {
  run: Run;
  /** Every key has an outcome that is not an error. */
  complete: boolean;
  /** The latest `completed_at` of the outcomes. */
  latest: string | undefined;
}

/**
 * The first pass of a streamed ResultSet, over the outcomes' heads: whether the run has any
 * outcome (else `E_INVALID_INPUT`: a ResultSet needs one result; nothing is written), whether it
 * is complete, and its latest `completed_at`.
 *
 * @example await writeResultSet(store, await prepareResultSet(store, run), write);
 */
export async function prepareResultSet(store: Store, run: Run): Promise<ResultSetCoverage> {
  const coverage = await scanCoverage(store, run);
  if (!coverage.any) {
    throw new StetError(
      "E_INVALID_INPUT",
      `run ${run.id} has no finished sample yet, and an EvalPort ResultSet needs at least one result; nothing was written`,
    );
  }
  return { run, complete: coverage.complete, latest: coverage.latest };
}

/** How a streamed ResultSet is laid out, and what its values go through before they are. */
export interface ResultSetLayout {
  /**
   * `pretty` (default): `JSON.stringify(doc, null, 2)` and a newline, as `stet export` and
   * `--output` write it; `compact`: `JSON.stringify(doc)`, as the API sends it.
   */
  style?: "pretty" | "compact";
  /** Applied to each value written (the header, each Result, the summary, each id). */
  redact?: <T>(value: T) => T;
}

/**
 * Streams a run's EvalPort ResultSet, byte for byte what `JSON.stringify(buildResultSet(…),
 * null, 2)` and a newline give (`compact`: what `JSON.stringify(buildResultSet(…))` gives),
 * without holding its results: after `prepareResultSet`'s pass, each page's Results are written
 * as they are read (journals and reviews included) and added to the summary; the metadata's
 * `test_case_ids`, and a partial run's `covered`, are written from a pass over the snapshot and
 * one over the heads. A `redact`ed document is the whole document redacted (it replaces strings
 * one by one, wherever they are).
 *
 * @example await writeResultSet(store, await prepareResultSet(store, run), write);
 */
export async function writeResultSet(
  store: Store,
  coverage: ResultSetCoverage,
  write: Write,
  layout: ResultSetLayout = {},
): Promise<void> {
  const { run } = coverage;
  const pretty = layout.style !== "compact";
  const redact = layout.redact ?? (<T>(value: T) => value);
  /** A line break and the indentation of `depth` (nothing when compact). */
  const nl = (depth: number) => (pretty ? `\n${"  ".repeat(depth)}` : "");
  const json = (value: unknown, depth: number) =>
    pretty
      ? indent(JSON.stringify(redact(value), null, 2), 2 * depth)
      : JSON.stringify(redact(value));
  const key = (name: string) => `"${name}":${pretty ? " " : ""}`;
  const epochs = run.config.epochs;
  const completedAt = coverage.complete ? coverage.latest : undefined;
  const { runner, provider, ...first } = resultSetHeader(run);
  const header = {
    ...first,
    ...(completedAt !== undefined && { completed_at: completedAt }),
    ...(provider !== undefined && { provider }),
    runner,
  };
  const head = json(header, 0);
  await write(`${head.slice(0, -1 - nl(0).length)},${nl(1)}${key("results")}[`);
  const summary = new ResultSummary();
  let separator = "";
  for await (const page of outcomePages(store, run.id, "whole", { journal: true, reviews: true })) {
    let text = "";
    for (const { outcomes } of page.samples) {
      for (const a of outcomes) {
        const result = toResult(a, { epochs, journal: page.journalOf, reviews: page.reviewsOf });
        summary.add(result);
        text += `${separator}${nl(2)}${json(result, 2)}`;
        separator = ",";
      }
    }
    if (text !== "") await write(text);
  }
  await write(`${nl(1)}],${nl(1)}${key("summary")}${json(summary.finish(), 1)},`);
  const partial = `${nl(2)}${key("openeval")}{${nl(3)}${key("partial")}true${nl(2)}},`;
  await write(
    `${nl(1)}${key("metadata")}{${coverage.complete ? "" : partial}` +
      `${nl(2)}${key("stet")}{${nl(3)}${key("test_case_ids")}[`,
  );
  const ids = (pages: AsyncIterable<string[]>) => writeIds(write, pages, (id) => json(id, 0), nl);
  await ids(sampleIds(store, run.id));
  await write(`,${nl(3)}${key("epochs")}${epochs}`);
  if (!coverage.complete) {
    await write(`,${nl(3)}${key("covered")}[`);
    await ids(coveredIds(store, run));
  }
  await write(`${nl(2)}}${nl(1)}}${nl(0)}}${pretty ? "\n" : ""}`);
}

/** JSON text nested `by` spaces deeper (its strings hold no raw newline). */
const indent = (json: string, by: number) => json.replace(/\n/g, `\n${" ".repeat(by)}`);

/** A list of ids at the metadata's depth, as `JSON.stringify` writes it in the layout. */
async function writeIds(
  write: Write,
  ids: AsyncIterable<string[]>,
  json: (id: string) => string,
  nl: (depth: number) => string,
): Promise<void> {
  let any = false;
  for await (const page of ids) {
    if (page.length === 0) continue;
    await write(`${any ? "," : ""}${nl(4)}${page.map(json).join(`,${nl(4)}`)}`);
    any = true;
  }
  await write(any ? `${nl(3)}]` : "]");
}

async function* sampleIds(store: Store, runId: string): AsyncIterable<string[]> {
  for await (const page of store.reads.sampleFingerprintPages(runId)) {
    yield page.map((s) => s.sampleId);
  }
}

/** The ids whose every epoch has an outcome that is not an error (`assembleResultSet`'s rule). */
async function* coveredIds(store: Store, run: Run): AsyncIterable<string[]> {
  for await (const page of outcomePages(store, run.id, "heads")) {
    yield page.samples.filter((s) => covers(s.outcomes, run.config.epochs)).map((s) => s.sample.id);
  }
}

function covers(outcomes: readonly { epoch: number; status: string }[], epochs: number): boolean {
  for (let epoch = 1; epoch <= epochs; epoch++) {
    if (!outcomes.some((a) => a.epoch === epoch && a.status !== "error")) return false;
  }
  return true;
}

/** The first pass: whether the run has an outcome, covers every key, and its latest completion. */
async function scanCoverage(store: Store, run: Run) {
  let any = false;
  let complete = true;
  let latest: string | undefined;
  for await (const page of outcomePages(store, run.id, "heads")) {
    for (const { outcomes } of page.samples) {
      if (outcomes.length > 0) any = true;
      if (complete && !covers(outcomes, run.config.epochs)) complete = false;
      latest = latestInstant([latest, ...outcomes.map((a) => rfc3339(a.completedAt))]);
    }
  }
  return { any, complete, latest };
}
