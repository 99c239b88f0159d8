import { setFlagsFromString } from "node:v8";
import { guardOutput } from "./guard-output.js";
import { main } from "./main.js";

// V8 "pretenures" objects from an allocation site that once survived a young-generation GC in
// bulk: it allocates them straight into the old generation from then on. A run's per-attempt
// objects are short-lived, but a burst (the first group commits) can look long-lived; on about
// one 100,000-sample run in three that decision sent every later attempt's garbage to the old
// generation and peak RSS rose from ~200 MB to ~300 MB. The CLI is a batch process with one
// workload, so it turns the heuristic off (checked at each GC, so setting it here takes effect).
setFlagsFromString("--no-allocation-site-pretenuring");

// `stet export … | head`: when the reader goes away, stop quietly instead of dying on EPIPE.
process.stdout.on("error", (error: NodeJS.ErrnoException) => {
  if (error.code !== "EPIPE") throw error;
  process.exit(0);
});

// No secret reaches the terminal or a redirected log, whichever path printed it.
guardOutput([process.stdout, process.stderr], process.argv.slice(2), process.env);

const code = await main(process.argv.slice(2));
// What is still queued for a pipe or socket goes out first: stdout and stderr to one are
// asynchronous, and `process.exit` drops what they hold (an export read by a slower process, as a
// Node parent reads its child's stdout, lost its last rows).
await Promise.all([process.stdout, process.stderr].map(flushed));
// Solvers may leave keep-alive sockets or timers behind; the run is recorded, so leave promptly.
process.exit(code);

/** Resolves once everything written to `stream` before it has been handed to the system. */
function flushed(stream: NodeJS.WriteStream): Promise<void> {
  if (stream.writableLength === 0 || stream.destroyed) return Promise.resolve();
  return new Promise((resolve) => stream.write("", () => resolve()));
}
