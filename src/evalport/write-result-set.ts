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

/**
 * Streams a run's EvalPort ResultSet, byte for byte what `JSON.stringify(buildResultSet(…),
 * null, 2)` and a newline give, without holding its results: after `prepareResultSet`'s pass,
 * each page's Results are written as they are read (journals and reviews included) and added to
 * the summary; the metadata's `test_case_ids`, and a partial run's `covered`, are written from a
 * pass over the snapshot and one over the heads.
 *
 * @example await writeResultSet(store, await prepareResultSet(store, run), write);
 */
export async function writeResultSet(
  store: Store,
  coverage: ResultSetCoverage,
  write: Write,
): Promise<void> {
  const { run } = coverage;
  const epochs = run.config.epochs;
  const completedAt = coverage.complete ? coverage.latest : undefined;
  const { runner, provider, ...first } = resultSetHeader(run);
  const header = {
    ...first,
    ...(completedAt !== undefined && { completed_at: completedAt }),
    ...(provider !== undefined && { provider }),
    runner,
  };
  const head = JSON.stringify(header, null, 2);
  await write(`${head.slice(0, -2)},\n  "results": [\n`);
  const summary = new ResultSummary();
  let separator = "";
  for await (const page of outcomePages(store, run.id, "whole", { journal: true, reviews: true })) {
    let text = "";
    for (const { outcomes } of page.samples) {
      for (const a of outcomes) {
        const result = toResult(a, { epochs, journal: page.journalOf, reviews: page.reviewsOf });
        summary.add(result);
        text += `${separator}    ${indent(JSON.stringify(result, null, 2), 4)}`;
        separator = ",\n";
      }
    }
    if (text !== "") await write(text);
  }
  await write(`\n  ],\n  "summary": ${indent(JSON.stringify(summary.finish(), null, 2), 2)},\n`);
  await write(
    `  "metadata": {\n${coverage.complete ? "" : `    "openeval": {\n      "partial": true\n    },\n`}` +
      `    "stet": {\n      "test_case_ids": [`,
  );
  await writeIds(write, sampleIds(store, run.id));
  await write(`,\n      "epochs": ${epochs}`);
  if (!coverage.complete) {
    await write(`,\n      "covered": [`);
    await writeIds(write, coveredIds(store, run));
  }
  await write(`\n    }\n  }\n}\n`);
}

/** JSON text nested `by` spaces deeper (its strings hold no raw newline). */
const indent = (json: string, by: number) => json.replace(/\n/g, `\n${" ".repeat(by)}`);

/** A list of ids as `JSON.stringify(…, null, 2)` writes it at the metadata's depth. */
async function writeIds(write: Write, ids: AsyncIterable<string[]>): Promise<void> {
  let any = false;
  for await (const page of ids) {
    if (page.length === 0) continue;
    await write(
      `${any ? "," : ""}\n        ${page.map((id) => JSON.stringify(id)).join(",\n        ")}`,
    );
    any = true;
  }
  await write(any ? "\n      ]" : "]");
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
