import { watchAbort } from "../core/abort-watch.js";
import { configurationFaultSchema } from "../core/schemas.js";
import type { AttemptError } from "../core/types.js";
import { PausableTimer, type TimeoutClock } from "./pausable-timer.js";

/** Thrown when the run aborted an attempt: such an attempt is not recorded, resume re-runs it. */
export class AttemptAborted extends Error {
  override readonly name = "AttemptAborted";
}

export class AttemptTimedOut extends Error {}

/** What an attempt's (or a scoring's) timeout and abort need from its task. */
interface Bounded {
  timeoutMs?: number | undefined;
  abort: AbortSignal;
}

/**
 * Runs `work` with a signal that fires on the run's abort or after the task's timeout (an
 * `AttemptTimedOut` reason), and cleans up after. `work` gets the timeout's clock: the time it
 * is paused is not counted.
 */
export async function withTimeout<T>(
  task: Bounded,
  work: (signal: AbortSignal, clock?: TimeoutClock) => Promise<T>,
): Promise<T> {
  if (task.timeoutMs === undefined) {
    // Without a timeout the run's own signal is the attempt's: no controller and listener per
    // attempt. The run aborts it with an AttemptAborted reason.
    return work(task.abort);
  }
  const controller = new AbortController();
  const onAbort = () => controller.abort(new AttemptAborted("aborted by the run"));
  task.abort.addEventListener("abort", onAbort, { once: true });
  if (task.abort.aborted) onAbort();
  const timeoutMs = task.timeoutMs;
  const timer = new PausableTimer(timeoutMs, () =>
    controller.abort(new AttemptTimedOut(`timed out after ${timeoutMs} ms`)),
  );
  try {
    return await work(controller.signal, timer);
  } finally {
    timer.clear();
    task.abort.removeEventListener("abort", onAbort);
  }
}

/** Resolves or rejects with `work`, or rejects with the abort reason as soon as `signal` fires. */
export function untilAborted<T>(work: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    // The run's signal, watched by every attempt: a watcher, not a listener each (abort-watch).
    const unwatch = watchAbort(signal, () => reject(signal.reason));
    work.then(resolve, reject).finally(unwatch);
  });
}

/**
 * Types a thrown value. Solvers signal provider/timeout failures with an error carrying `type`,
 * and a provider error that no request would get past with `configuration` (a ConfigurationFault).
 */
export function solverError(thrown: unknown, signal: AbortSignal): AttemptError {
  if (signal.aborted && signal.reason instanceof AttemptAborted) throw signal.reason;
  if (signal.aborted && signal.reason instanceof AttemptTimedOut) {
    return { type: "timeout", message: signal.reason.message };
  }
  const message = thrown instanceof Error ? thrown.message : String(thrown);
  const tagged = thrown as { type?: unknown; status?: unknown } | null;
  const type = typeof tagged === "object" && tagged !== null ? tagged.type : undefined;
  const error: AttemptError = {
    type: type === "provider" || type === "timeout" ? type : "solver",
    message,
  };
  if (typeof tagged?.status === "number") error.status = tagged.status;
  if (error.type === "provider") {
    const fault = configurationFaultSchema.safeParse(
      (tagged as { configuration?: unknown } | null)?.configuration,
    );
    if (fault.success) error.configuration = fault.data;
  }
  return error;
}
