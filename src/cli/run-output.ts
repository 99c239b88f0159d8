import { isStetError, StetError } from "../core/errors.js";
import type { RunEvent } from "../core/events.js";
import type { Store } from "../store/types.js";
import { EXIT } from "./exit-codes.js";
import type { Io } from "./io.js";
import { prepareOutputFile } from "./output-file.js";

type Listener = (event: RunEvent) => void;
/** What `withRunOutput` adds to an execution's options: its events teed, and the back-fill awaited. */
type Attach = (onEvent: Listener) => { onEvent: Listener; beforeExecute?: () => Promise<void> };

/**
 * Checks, before the run exists, that `--output` can be written: the Results JSONL and the
 * ResultSet beside it (`resultOutputPaths`), folders created when missing (`prepareOutputFile`).
 * A path that cannot be written is a usage error now rather than after the eval was paid for.
 * For a resume (`resuming`: the run's id) the Results JSONL it will append to is read too: one
 * whose lines are not Results of that run is refused now, not after the run executed. Without
 * `path` there is nothing to check.
 *
 * @example await prepareRunOutput("out/results.jsonl", "--output"); // out/ exists afterwards
 */
export async function prepareRunOutput(
  path: string | undefined,
  flag: string,
  resuming?: string,
): Promise<void> {
  if (path === undefined) return;
  const { resultOutputPaths } = await import("../evalport/result-stream.js");
  const { lines, resultSet } = resultOutputPaths(path);
  await prepareOutputFile(path, flag);
  if (lines !== path) await prepareOutputFile(lines, `${flag} ${path}: its Results JSONL`);
  if (resultSet !== path) await prepareOutputFile(resultSet, `${flag} ${path}: its ResultSet`);
  if (resuming === undefined) return;
  const { checkResultLog } = await import("../evalport/result-log.js");
  try {
    checkResultLog(lines, resuming);
  } catch (error) {
    if (!isStetError(error)) throw error;
    throw new StetError(error.code, `${flag}: ${error.message}`, { cause: error });
  }
}

/**
 * `--output <file>` for `stet run` and `stet resume`: `execute` gets an `attach` that adds the
 * Results stream to the UI's event listener and has the engine await the stream's back-fill
 * before it executes a key (`beforeExecute`); afterwards the ResultSet is written and where
 * it went is said. Without `path` this is just `execute`. A stream or ResultSet that could not
 * be written turns a successful exit into 1; "no finished sample yet" is only reported.
 *
 * @example
 * return withRunOutput(store, io, flags.output, (attach) =>
 *   runWithUi(io, ui, (controls) => runEval({ ...opts, ...controls, ...attach(controls.onEvent) })));
 */
export async function withRunOutput(
  store: Store,
  io: Io,
  path: string | undefined,
  execute: (attach: Attach) => Promise<number>,
): Promise<number> {
  if (path === undefined) return execute((onEvent) => ({ onEvent }));
  // EvalPort mapping and validation load only when --output asks for them.
  const { createResultStream } = await import("../evalport/result-stream.js");
  const stream = createResultStream({ store, path });
  let code: number | undefined;
  try {
    code = await execute((onEvent) => ({
      onEvent: (event) => {
        onEvent(event);
        stream.onEvent(event);
      },
      beforeExecute: stream.ready,
    }));
  } finally {
    const report = await stream.finish();
    if (report.written)
      io.say(`results: ${report.lines} (${report.results} lines), ${report.resultSet}`);
    if (report.problem) {
      io.stderr.write(`--output: ${report.problem.message}\n`);
      if (report.problem.fatal && code === EXIT.ok) code = EXIT.fatal;
    }
  }
  return code ?? EXIT.fatal;
}
