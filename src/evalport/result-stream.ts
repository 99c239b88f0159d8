import { isStetError, StetError } from "../core/errors.js";
import { keyString } from "../core/keys.js";
import type { RunEvent } from "../core/events.js";
import type { Attempt } from "../core/types.js";
import type { Store } from "../store/types.js";
import { loadOutcomes } from "./build-result-set.js";
import { prepareResultSet, writeResultSet } from "./write-result-set.js";
import { toResult } from "./result-mapping.js";
import { ResultLog } from "./result-log.js";
import { resultKey, type EvalPortResult } from "./result-set-types.js";
import { isObject } from "./validation-types.js";
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
  /** Lines this invocation appended (back-filled ones included). */
  appended: number;
  /** Whether the ResultSet file was written. */
  written: boolean;
  /** Why something was not written. `fatal` is false for "no finished sample yet". */
  problem?: { message: string; fatal: boolean };
}

export interface ResultStream {
  /** Feed it the engine's events (it never throws). */
  onEvent: (event: RunEvent) => void;
  /** Waits for pending lines, then writes the ResultSet file atomically. Never throws. */
  finish: () => Promise<ResultStreamReport>;
}

/**
 * `--output`: appends one Result line per scored attempt once the engine reports it committed
 * (`attempt-committed` fires only after the store made it durable), in batches of one write
 * and one fsync each. Error attempts are not streamed: they are not finished work (the final
 * ResultSet has them). A new run starts the file afresh; a resumed run (`run-started` with
 * `resumed`) reopens it, cuts a torn last line, drops lines the run has superseded (a changed
 * sample re-run under `--rerun-changed`, a key asked to re-run with `--rerun`) and refuses
 * another run's file. Either way the scored
 * outcomes already stored that the file lacks (committed just before a kill, or seeded with
 * `--resume-from`) are back-filled first, so the file holds each key exactly once, current. The
 * file is opened only at `run-started`, after the engine owns the run, so a refused resume
 * never touches it. `finish` writes the run's ResultSet to the `.json` path (see
 * `resultOutputPaths`) whatever the run's final status.
 *
 * @example
 * const out = createResultStream({ store, path: "results.jsonl" });
 * await runEval({ store, eval: ev, onEvent: out.onEvent });
 * const { written, problem } = await out.finish();
 */
export function createResultStream(options: { store: Store; path: string }): ResultStream {
  const { store } = options;
  const paths = resultOutputPaths(options.path);
  let runId: string | undefined;
  let log: ResultLog | undefined;
  let epochs = 1;
  let appended = 0;
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
    const { run, outcomes } = await loadOutcomes(store, id);
    epochs = run.config.epochs;
    // A key asked to re-run (`--rerun`) whose new attempt is not stored yet has no line until it
    // is: its old one is dropped, so the re-run's line can take its place.
    const rerun = new Map((run.config.rerun ?? []).map((r) => [keyString(r), r.after]));
    const current = lines(
      outcomes.filter((a) => {
        const after = rerun.get(keyString(a));
        return after === undefined || a.attempt > after;
      }),
    );
    if (resumed) {
      // A line stays while it is its key's current outcome (the same stored attempt); one that
      // the run superseded (a changed sample about to be re-run) is dropped, not left stale.
      const stored = new Map(current.map((r) => [resultKey(r), storedAttempt(r)]));
      log = ResultLog.reopen(paths.lines, id, (line) => {
        const key = resultKey(line);
        return stored.has(key) && (storedAttempt(line) ?? stored.get(key)) === stored.get(key);
      });
    } else {
      log = ResultLog.create(paths.lines);
    }
    appended += log.append(current);
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
        appended += log!.append(lines(batch));
      });
    }
  };

  const finish = async (): Promise<ResultStreamReport> => {
    await chain;
    log?.close();
    const report: ResultStreamReport = { ...paths, appended, written: false };
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

  return { onEvent, finish };
}

/** The stored attempt number a stet-written Result names (`metadata.stet.attempt`). */
function storedAttempt(result: EvalPortResult): number | undefined {
  const stet = result.metadata?.stet;
  return isObject(stet) && typeof stet.attempt === "number" ? stet.attempt : undefined;
}
