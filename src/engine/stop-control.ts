import { setMaxListeners } from "node:events";
import type { StetError } from "../core/errors.js";
import type { RunEvent, StopReason } from "../core/events.js";
import { createSecretRedactor, type Secret } from "../core/secrets.js";
import type { AttemptError } from "../core/types.js";
import { AttemptAborted } from "./attempt-signal.js";

/** Why an execution stopped before its plan was done, and the note its run is released with. */
export interface StopCause {
  reason: Exclude<StopReason, "ownership-lost">;
  note: string;
  /** For `store-unwritable`: the failure, whose attempts went to the fallback file. */
  error?: StetError;
  /** For `misconfigured`: the error the first samples all failed with, and how many did. */
  misconfiguration?: { error: AttemptError; samples: number };
}

export interface StopControlOptions {
  emit: (event: RunEvent) => void;
  /** How many attempts are in flight (the `stopping` event says it). */
  inflight: () => number;
  /** How long a graceful stop lets in-flight attempts run before it aborts them. */
  graceMs?: number | undefined;
}

/**
 * An execution's stop: the first reason given wins (and is announced once, as a `stopping`
 * event), and the one abort signal every in-flight attempt listens on. A graceful stop lets what
 * is in flight finish within the grace period, then aborts it; an immediate one aborts at once.
 *
 * @example const stops = new StopControl({ emit, inflight: () => 0 }); stops.gracefully("signal", "interrupted");
 */
export class StopControl {
  /** Why the execution stops; null while it runs. */
  reason: StopReason | null = null;
  /** The note the run is released with, from the first stop. */
  note = "";
  readonly #abort = new AbortController();
  readonly #options: StopControlOptions;

  constructor(options: StopControlOptions) {
    this.#options = options;
    // Every in-flight attempt listens on this one signal: as many listeners as the concurrency.
    setMaxListeners(0, this.#abort.signal);
  }

  /** Aborts every attempt in flight (an `AttemptAborted` reason) when the execution stops now. */
  get signal(): AbortSignal {
    return this.#abort.signal;
  }

  /** Stops dispatching for `reason` (the first one given stands); `now` also aborts what is in flight. */
  stop(reason: StopReason, now: boolean, note: string): void {
    if (!this.reason) {
      this.reason = reason;
      this.note = note;
      const inflight = this.#options.inflight();
      this.#options.emit({ type: "stopping", reason, inflight, ...(note ? { note } : {}) });
    }
    if (now) this.abortInflight();
  }

  /** Graceful: no new dispatches; in-flight attempts get the grace period, then are aborted. */
  gracefully(reason: "signal" | "cancel" | "misconfigured", note: string): void {
    this.stop(reason, false, note);
    const grace = setTimeout(() => this.abortInflight(), this.#options.graceMs ?? 10_000);
    grace.unref();
  }

  /** Aborts what is in flight without a stop reason (an unexpected error's, which is thrown). */
  abortInflight(): void {
    this.#abort.abort(new AttemptAborted("aborted by the run"));
  }

  /**
   * Stops on the caller's signals: `signal` gracefully, `abortSignal` at once (its reason, when a
   * string, is the note, with the run's secrets blanked). Returns what removes the listeners.
   */
  listen(
    signal: AbortSignal | undefined,
    abortSignal: AbortSignal | undefined,
    secrets: readonly Secret[] = [],
  ): () => void {
    const onSignal = () => this.gracefully("signal", "interrupted by a signal");
    const onAbortSignal = () => {
      const reason: unknown = abortSignal?.reason;
      const note =
        typeof reason === "string"
          ? createSecretRedactor(secrets).text(reason).value
          : "interrupted by a signal";
      this.stop("signal", true, note);
    };
    signal?.addEventListener("abort", onSignal, { once: true });
    abortSignal?.addEventListener("abort", onAbortSignal, { once: true });
    return () => {
      signal?.removeEventListener("abort", onSignal);
      abortSignal?.removeEventListener("abort", onAbortSignal);
    };
  }
}
