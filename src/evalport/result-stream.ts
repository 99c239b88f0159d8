import { isStetError, StetError } from "../core/errors.js";
import { keyString } from "../core/keys.js";
import type { RunEvent } from "../core/events.js";
import type { Attempt } from "../core/types.js";
import type { Store } from "../store/types.js";
import { prepareResultSet, writeResultSet } from "./write-result-set.js";
import { toResult } from "./result-mapping.js";
import { checkResultLog, ResultLog, resultLines } from "./result-log.js";
import { outcomePages } from "./outcome-pages.js";
import { writeStreamAtomic } from "../durable/write-file-atomic.js";

/**
 * Where `--output <path>` writes: the Results JSONL streamed during the run and the ResultSet
 * written at its end. `results.jsonl` (or `.ndjson`) → `results.json`; a `.json` path is the
 * ResultSet and streams to its sibling `.jsonl`; any other path gets `.json` appended.
 *
 * @example resultOutputPaths("out/results.json") // { lines: "out/results.jsonl", resultSet: "out/results.json" }
 */
export function resultOutputPaths(path: string): { lines: string; resultSet: string } {
  if (/\.json$/i.test(path)) return { lines: `${path}l`, resultSet: path };
  return { lines: path, resultSet: `${path.replace(/\.(jsonl|ndjson)$/i, "")}.json` };
}

export interface ResultStreamReport {
  lines: string;
  resultSet: string;
  /**
   * Results the JSONL holds at the end: those the store had when the run started (the file is
   * written afresh from them) and those streamed since.
   */
  results: number;
  /** Whether the ResultSet file was written. */
  written: boolean;
  /** Why something was not written. `fatal` is false for "no finished sample yet". */
  problem?: { message: string; fatal: boolean };
}

export interface ResultStream {
  /** Feed it the engine's events (it never throws). */
  onEvent: (event: RunEvent) => void;
  /**
   * Resolves once the file holds what the store had at `run-started` (never rejects): the
   * engine's `beforeExecute`, so the back-fill is written before any key executes.
   */
  ready: () => Promise<void>;
  /** Waits for pending lines, then writes the ResultSet file atomically. Never throws. */
  finish: () => Promise<ResultStreamReport>;
}

/**
 * `--output`: the run's Results JSONL, one line per key's current scored outcome. At
 * `run-started` (after the engine owns the run, so a refused resume never touches the file) the
 * file is written afresh from the store, a page of samples at a time, and replaces the old one
 * atomically: a new run's seeded outcomes (`--resume-from`, `--reuse`), a resumed run's scored
 * outcomes so far (a torn last line, a line the run superseded, such as a changed sample re-run
 * under `--rerun-changed` or a key asked to re-run with `--rerun`, are gone with the old file).
 * A resume first refuses a file that holds another run's results or lines that are not Results.
 * Then each scored attempt is appended once the engine reports it committed (`attempt-committed`
 * fires only after the store made it durable), in batches of one write and one fsync each; the
 * engine awaits `ready` before it executes any key, so no key has two lines. Error attempts are
 * not streamed: they are not finished work (the final ResultSet has them). Nothing is held per
 * key: memory does not grow with the run. `finish` writes the run's ResultSet to the `.json`
 * path (see `resultOutputPaths`) whatever the run's final status.
 *
 * @example
 * const out = createResultStream({ store, path: "results.jsonl" });
 * await runEval({ store, eval: ev, onEvent: out.onEvent, beforeExecute: out.ready });
 * const { written, problem } = await out.finish();
 */
export function createResultStream(options: { store: Store; path: string }): ResultStream {
  const { store } = options;
  const paths = resultOutputPaths(options.path);
  let runId: string | undefined;
  let log: ResultLog | undefined;
  let epochs = 1;
  let results = 0;
  let failure: Error | undefined;
  let chain = Promise.resolve();
  let pending: Attempt[] = [];

  // Work runs one step at a time, in event order; after a failure streaming stops (the
  // ResultSet at the end is still written from the store).
  const enqueue = (work: () => Promise<void> | void) => {
    chain = chain.then(async () => {
      if (failure) return;
      try {
        await work();
      } catch (error) {
        failure = error instanceof Error ? error : new Error(String(error));
      }
    });
  };

  const start = async (id: string, resumed: boolean) => {
    const run = await store.runs.get(id);
    if (!run) throw new StetError("E_RUN_NOT_FOUND", `no run with id "${id}"`);
    epochs = run.config.epochs;
    if (resumed) checkResultLog(paths.lines, id);
    // A key asked to re-run (`--rerun`) whose new attempt is not stored yet has no line until it
    // is: its old one is dropped, so the re-run's line can take its place.
    const rerun = new Map<string, number>();
    for await (const page of store.reads.rerunPages(id)) {
      for (const r of page) rerun.set(keyString(r), r.after);
    }
    const current = (a: Attempt) => {
      const after = rerun.get(keyString(a));
      return after === undefined || a.attempt > after;
    };
    await writeStreamAtomic(paths.lines, async (write) => {
      for await (const page of outcomePages(store, id, "whole")) {
        const written = page.samples.flatMap((s) => lines(s.outcomes.filter(current)));
        if (written.length === 0) continue;
        await write(resultLines(written));
        results += written.length;
      }
    });
    log = ResultLog.append(paths.lines);
  };
  const lines = (attempts: readonly Attempt[]) =>
    attempts.filter((a) => a.status === "scored").map((a) => toResult(a, { epochs }));

  const onEvent = (event: RunEvent) => {
    if (event.type === "run-started" && runId === undefined) {
      runId = event.runId;
      enqueue(() => start(event.runId, event.resumed));
    } else if (event.type === "attempt-committed" && event.attempt.status === "scored") {
      pending.push(event.attempt);
      if (pending.length > 1) return;
      enqueue(() => {
        const batch = pending;
        pending = [];
        results += log!.write(lines(batch));
      });
    }
  };

  const finish = async (): Promise<ResultStreamReport> => {
    await chain;
    log?.close();
    const report: ResultStreamReport = { ...paths, results, written: false };
    if (failure) return { ...report, problem: { message: failure.message, fatal: true } };
    if (runId === undefined) return report;
    try {
      const run = await store.runs.get(runId);
      if (!run) throw new StetError("E_RUN_NOT_FOUND", `no run with id "${runId}"`);
      // The first pass refuses a run with no result before the file is touched.
      const coverage = await prepareResultSet(store, run);
      await writeStreamAtomic(paths.resultSet, (write) => writeResultSet(store, coverage, write));
      return { ...report, written: true };
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      return { ...report, problem: { message, fatal: !isStetError(error, "E_INVALID_INPUT") } };
    }
  };

  return { onEvent, ready: () => chain, finish };
}
