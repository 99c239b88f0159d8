import type { Context } from "hono";
import type { RunReport } from "../core/events.js";
import type { AppDeps } from "./app-deps.js";
import { EventQueue } from "./event-queue.js";
import { executionMessages } from "./execution-messages.js";
import type { ExecutionControls, ExecutionEvent } from "./executions.js";
import { sseResponse } from "./sse.js";

/**
 * Starts `execute` as a server-owned execution and answers with its SSE stream. The run belongs
 * to the server: a client that goes away only unsubscribes. `release` gives back the stream's
 * slot (StreamSlots.take) when the stream ends.
 *
 * @example return streamExecution(c, deps, runId, (controls) => runEval({ ...opts, ...controls }), release);
 */
export function streamExecution(
  c: Context,
  deps: AppDeps,
  runId: string,
  execute: (controls: ExecutionControls) => Promise<RunReport>,
  release: () => void,
): Response {
  const queue = new EventQueue<ExecutionEvent>();
  const unsubscribe = deps.executions.start(runId, execute).subscribe(queue);
  return sseResponse(c, executionMessages(queue), {
    redact: deps.redact,
    log: deps.log,
    onAbort: () => {
      unsubscribe();
      queue.close();
    },
    onEnd: release,
  });
}
