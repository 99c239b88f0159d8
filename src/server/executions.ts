import type { RunEvent, RunReport } from "../core/events.js";
import type { EventQueue } from "./event-queue.js";

/** What a subscriber of an execution sees: the engine's events, or why the execution failed. */
export type ExecutionEvent = RunEvent | { type: "execution-failed"; error: unknown };

/** The engine's controls for one execution (see ExecuteOptions). */
export interface ExecutionControls {
  signal: AbortSignal;
  abortSignal: AbortSignal;
  onEvent: (event: RunEvent) => void;
}

export interface ActiveExecution {
  runId: string;
  /** Graceful stop: no new dispatches, in-flight attempts finish, the run becomes interrupted. */
  stop(): void;
  /** Immediate stop: in-flight attempts are aborted (and re-run by the next resume). */
  abort(): void;
  /** Events from now on; the queue is closed when the execution ends. Returns an unsubscribe. */
  subscribe(queue: EventQueue<ExecutionEvent>): () => void;
  /** The report, or undefined when the execution failed. Never rejects. */
  done: Promise<RunReport | undefined>;
}

/**
 * The runs this server executes. An execution lives here, not in the HTTP request that started
 * it: a client that disconnects only unsubscribes, and shutdown stops every run gracefully.
 *
 * @example
 * const executions = new ExecutionRegistry();
 * const execution = executions.start(runId, (controls) => runEval({ store, eval: ev, runId, ...controls }));
 * execution.subscribe(queue);
 * await executions.stopAll(); // on SIGTERM: every run becomes interrupted, i.e. resumable
 */
export class ExecutionRegistry {
  readonly #active = new Map<string, ActiveExecution>();

  get(runId: string): ActiveExecution | undefined {
    return this.#active.get(runId);
  }

  list(): ActiveExecution[] {
    return [...this.#active.values()];
  }

  /**
   * Starts `execute` under `runId`. It begins on a later microtask, so a subscription made right
   * after `start` returns sees every event, the first one included.
   */
  start(
    runId: string,
    execute: (controls: ExecutionControls) => Promise<RunReport>,
  ): ActiveExecution {
    const stop = new AbortController();
    const abort = new AbortController();
    const subscribers = new Set<EventQueue<ExecutionEvent>>();
    const emit = (event: ExecutionEvent) => subscribers.forEach((q) => q.push(event));
    const finish = () => {
      this.#active.delete(runId);
      subscribers.forEach((q) => q.close());
      subscribers.clear();
    };
    const entry: ActiveExecution = {
      runId,
      stop: () => stop.abort(),
      abort: () => {
        stop.abort();
        abort.abort();
      },
      subscribe: (queue) => {
        subscribers.add(queue);
        return () => subscribers.delete(queue);
      },
      done: Promise.resolve(),
    } as ActiveExecution;
    this.#active.set(runId, entry);
    entry.done = Promise.resolve()
      .then(() => execute({ signal: stop.signal, abortSignal: abort.signal, onEvent: emit }))
      .then(
        (report) => report,
        (error: unknown) => {
          emit({ type: "execution-failed", error });
          return undefined;
        },
      )
      .finally(finish);
    return entry;
  }

  /** Stops every execution gracefully and resolves when all have ended. */
  async stopAll(): Promise<(RunReport | undefined)[]> {
    const running = this.list();
    running.forEach((e) => e.stop());
    return Promise.all(running.map((e) => e.done));
  }

  /** Aborts every execution at once (a second Ctrl-C). */
  abortAll(): void {
    this.list().forEach((e) => e.abort());
  }

  /** Resolves when nothing is executing (executions started meanwhile are awaited too). */
  async idle(): Promise<void> {
    while (this.#active.size > 0) await Promise.all(this.list().map((e) => e.done));
  }
}
