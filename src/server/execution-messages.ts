import type {
  AttemptHeadView,
  EventMessage,
  ExecutionEvents,
  ExecutionProgressView,
} from "../api/contract.js";
import type { Progress } from "../core/events.js";
import type { Json } from "../core/json.js";
import type { AttemptHead } from "../store/types.js";
import { toApiError } from "./api-error.js";
import { trajectoryUsage } from "../core/usage.js";
import type { ExecutionEvent } from "./executions.js";

/**
 * The SSE messages of a run this server executes:
 * `started {runId, total, preserved, remaining, …}` first, then per committed attempt `sample`
 * and `progress` (per scoring of a stored attempt, `scoring` and `progress`), `stopping {reason,
 * inflight, note?}` when a stop begins (reason `budget` when the spend cap stopped it),
 * `warning {code, message}` (a spend the cap cannot count), and `completed {report}` or
 * `error {code, message}` last.
 *
 * @example for await (const m of executionMessages(queue)) await stream.writeSSE(m);
 */
export async function* executionMessages(
  events: AsyncIterable<ExecutionEvent>,
): AsyncGenerator<EventMessage<ExecutionEvents>> {
  for await (const event of events) yield* toMessages(event);
}

function toMessages(event: ExecutionEvent): EventMessage<ExecutionEvents>[] {
  switch (event.type) {
    case "run-started":
      return [
        {
          event: "started",
          data: {
            runId: event.runId,
            evalName: event.evalName,
            resumed: event.resumed,
            total: event.plan.total,
            preserved: event.plan.preserved,
            remaining: event.plan.toExecute,
            plan: event.plan,
          },
        },
      ];
    case "attempt-committed":
      return [
        { event: "sample", data: attemptSummary(event.attempt) },
        { event: "progress", data: progressSummary(event.progress) },
      ];
    case "scoring-committed": {
      const { runId: _runId, ...scoring } = event.scoring;
      return [
        { event: "scoring", data: scoring },
        { event: "progress", data: progressSummary(event.progress) },
      ];
    }
    case "store-retry":
      return [
        { event: "store-retry", data: { failures: event.failures, retryInMs: event.retryInMs } },
      ];
    case "stopping":
      return [
        {
          event: "stopping",
          data: {
            reason: event.reason,
            inflight: event.inflight,
            ...(event.note === undefined ? {} : { note: event.note }),
          },
        },
      ];
    case "batch":
      // Not streamed: the API shows a run's batches from the store.
      return [];
    case "warning":
      return [{ event: "warning", data: { code: event.code, message: event.message } }];
    case "run-finished":
      return [{ event: "completed", data: event.report }];
    case "execution-failed": {
      const { code, message } = toApiError(event.error);
      return [{ event: "error", data: { code, message } }];
    }
  }
}

/**
 * An attempt as streamed and listed: everything but the (possibly large) transcript.
 *
 * @example attemptSummary(attempt) // { sampleId, epoch, attempt, status, output, scores, … }
 */
export function attemptSummary<A extends AttemptHead & { transcript?: Json }>(
  attempt: A,
): AttemptHeadView & Omit<A, "runId" | "transcript"> {
  const { runId: _runId, transcript: _transcript, ...summary } = attempt;
  // Its whole trajectory: calls carried from an errored attempt of the key count as replayed.
  if (summary.usage) summary.usage = trajectoryUsage(summary.usage);
  return summary;
}

function progressSummary(progress: Progress): ExecutionProgressView {
  return { ...progress, remaining: progress.total - progress.done };
}
