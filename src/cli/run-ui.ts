import { isStetError, type StetError } from "../core/errors.js";
import type { FallbackOutcome, RunEvent, RunReport } from "../core/events.js";
import { exitCodeForError, exitCodeForStatus, EXIT } from "./exit-codes.js";
import type { Io } from "./io.js";
import { createProgress } from "./render/progress.js";
import { renderFallback } from "./render/fallback.js";
import { importHint, resumeHint, type ResumeHint } from "./resume-hint.js";
import { renderPlan, renderReuse, renderSummary } from "./render/summary.js";
import { markdownStopped, markdownSummary, type MarkdownOptions } from "./reports/markdown.js";
import { describeFault, faultHook, trapFaults } from "./faults.js";
import { trapSignals } from "./signals.js";
import { appendStepSummary } from "./step-summary.js";

export interface UiOptions {
  json: boolean;
  /** Every scorer's mean must reach this, else exit 4. */
  failUnder?: number;
  /** The `--store` flag, so the printed resume command names the same store. */
  store?: string;
  /** The run's model (its `--model`), named in the step summary as the export names it. */
  model?: string;
  /**
   * The command the step summary gives to finish an incomplete run; by default `stet resume`.
   * `stet rescore` gives the rescore command instead (`rescoreHint`).
   */
  summaryHint?: ResumeHint;
  /**
   * Whether the invocation left its own work unfinished though no key is left (a rescore that
   * stopped early); then the step summary gives `summaryHint`.
   */
  unfinished?: () => Promise<boolean>;
}

/** The UI options of `stet run` and `stet resume` flags. */
export function uiOptions(
  flags: { json?: boolean; failUnder?: number; store?: string },
  summary: {
    model?: string | undefined;
    summaryHint?: ResumeHint;
    unfinished?: () => Promise<boolean>;
  } = {},
): UiOptions {
  return {
    json: flags.json ?? false,
    ...(flags.failUnder === undefined ? {} : { failUnder: flags.failUnder }),
    ...(flags.store === undefined ? {} : { store: flags.store }),
    ...(summary.model === undefined ? {} : { model: summary.model }),
    ...(summary.summaryHint === undefined ? {} : { summaryHint: summary.summaryHint }),
    ...(summary.unfinished === undefined ? {} : { unfinished: summary.unfinished }),
  };
}

type Engine = (controls: {
  signal: AbortSignal;
  abortSignal: AbortSignal;
  onEvent: (event: RunEvent) => void;
}) => Promise<RunReport>;

/**
 * Runs the engine with the terminal attached: the run id first, the plan for resumes, a live
 * progress display, signals, and the summary; returns the exit code. A run stopped by its
 * endpoint (`E_ENDPOINT`) is interrupted, so its message is followed by the resume command. An
 * unexpected error, thrown by the engine or nowhere caught in this process (`trapFaults`), leaves
 * the run interrupted: the error is printed with the resume command, and the exit code is 1.
 */
export async function runWithUi(io: Io, options: UiOptions, engine: Engine): Promise<number> {
  const progress = createProgress(io.stderr);
  let runId = "";
  let evalName = "";
  const signals = trapSignals((signal) => {
    progress.done();
    io.stderr.write(
      `\n${signal}: finishing in-flight samples (press Ctrl-C again to abort them now)…\n`,
    );
  });
  const testFault = faultHook();
  const onEvent = (event: RunEvent) => {
    testFault(event);
    switch (event.type) {
      case "run-started":
        runId = event.runId;
        evalName = event.evalName;
        io.say(`run ${event.runId} · ${event.evalName} · ${event.plan.total} keys`);
        if (event.resumed) io.say(renderPlan(event.plan));
        if (event.reuse) io.say(renderReuse(event.reuse).join("\n"));
        if (event.resumed && event.plan.toExecute === 0) io.say("nothing left to execute");
        break;
      case "attempt-committed":
      case "scoring-committed":
        progress.update(event.progress);
        break;
      case "store-retry":
        progress.done();
        io.stderr.write(
          `store write failed (${event.message}); retry ${event.failures} in ${event.retryInMs}ms\n`,
        );
        break;
      case "stopping":
        if (event.reason === "cancel") {
          progress.done();
          io.stderr.write(`\n${event.note ?? "cancelled"}: finishing in-flight samples…\n`);
        } else if (event.reason === "budget") {
          progress.done();
          io.stderr.write(`\n${event.note ?? "budget reached"}…\n`);
        }
        break;
      case "batch":
        progress.done();
        io.stderr.write(`${batchLine(event)}\n`);
        break;
      case "warning":
        progress.done();
        io.stderr.write(`stet: warning: ${event.message}\n`);
        break;
      case "run-finished":
        progress.done();
        break;
    }
  };
  const faults = trapFaults();
  const abortSignal = AbortSignal.any([signals.abort, faults.abort]);
  let report: RunReport;
  try {
    report = await engine({ signal: signals.stop, abortSignal, onEvent });
  } catch (error) {
    const fault = faults.fault();
    if (fault) {
      progress.done();
      return faulted(io, fault.error, runId, options.store);
    }
    if (isStetError(error, "E_STORE_UNWRITABLE")) {
      progress.done();
      io.stderr.write(`stet: ${error.message}\n${storeFailure(error, runId, options.store)}\n`);
      await appendStopSummary(io, options, { runId, evalName, why: "store unwritable", error });
      return exitCodeForError(error.code);
    }
    if (!isStetError(error, "E_ENDPOINT")) {
      // A bug, or a listener that threw: the run was released interrupted (`runExecution`).
      if (isStetError(error) || runId === "" || isBrokenPipe(error)) throw error;
      progress.done();
      return faulted(io, error, runId, options.store);
    }
    progress.done();
    const remaining = error.details?.remaining;
    const left = typeof remaining === "number" ? `; ${remaining} keys left` : "";
    io.stderr.write(
      `stet: ${error.message}\ninterrupted${left}. Once the endpoint is fixed, resume with: ${withNote(resumeHint(runId, options.store))}\n`,
    );
    await appendStopSummary(io, options, { runId, evalName, why: "endpoint failed", error });
    return exitCodeForError(error.code);
  } finally {
    signals.release();
    faults.release();
    progress.done();
  }
  const fault = faults.fault();
  if (fault) return faulted(io, fault.error, runId, options.store);
  io.say(renderSummary(report));
  await appendStepSummary(
    io,
    markdownSummary(
      report,
      summaryOptions(options, runId, (await options.unfinished?.()) ?? false),
    ),
  );
  if (options.json) io.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
  return finalCode(io, report, options, runId);
}

function isBrokenPipe(error: unknown): boolean {
  return (error as NodeJS.ErrnoException | null)?.code === "EPIPE";
}

/** An unexpected error, and the resume command of the run it left interrupted: exit 1. */
function faulted(io: Io, error: unknown, runId: string, store: string | undefined): number {
  io.stderr.write(`stet: ${describeFault(error)}\n`);
  if (runId !== "") {
    io.stderr.write(
      `run ${runId} is interrupted; resume with: ${withNote(resumeHint(runId, store))}\n`,
    );
  }
  return EXIT.fatal;
}

/**
 * The step summary's model line and the command that finishes the run: `summaryHint` (the
 * rescore's) when the invocation stopped before its report or left its own work unfinished,
 * else the resume command.
 */
function summaryOptions(options: UiOptions, runId: string, unfinished: boolean): MarkdownOptions {
  const own = options.summaryHint !== undefined && unfinished;
  return {
    invocation: true,
    ...(own ? { incomplete: true } : {}),
    resumeCommand: withNote(own ? options.summaryHint! : resumeHint(runId, options.store)),
    ...(options.model === undefined ? {} : { model: options.model }),
  };
}

/**
 * The step summary of a run stopped before its report (an endpoint that failed, a store that
 * stayed unwritable): what stopped it and the command that finishes it. Nothing when the run
 * never started (no run id): then there is nothing to finish.
 */
async function appendStopSummary(
  io: Io,
  options: UiOptions,
  stop: { runId: string; evalName: string; why: string; error: StetError },
): Promise<void> {
  if (stop.runId === "" || !process.env.GITHUB_STEP_SUMMARY) return;
  const remaining = stop.error.details?.remaining;
  const fallback = stop.error.details?.fallback as FallbackOutcome | undefined;
  const restore =
    fallback?.path == null
      ? {}
      : { importCommand: withNote(importHint(fallback.path, stop.runId, options.store)) };
  await appendStepSummary(
    io,
    markdownStopped({
      ...stop,
      message: stop.error.message,
      ...(typeof remaining === "number" ? { remaining } : {}),
      ...restore,
      ...summaryOptions(options, stop.runId, true),
    }),
  );
}

function finalCode(io: Io, report: RunReport, options: UiOptions, runId: string): number {
  if (report.status === "running") {
    // A worker of a distributed run that stopped while the run's other workers go on.
    if (!report.stopped) return EXIT.ok;
    const { reason, note } = report.stopped;
    // A cancel and the spend cap stop every worker; the last to leave interrupts the run.
    const what =
      reason === "cancel" || reason === "budget"
        ? `its other workers are stopping too; then resume it with: ${withNote(resumeHint(runId, options.store))}`
        : "it goes on with its other workers";
    io.stderr.write(`this worker stopped (${note}); run ${runId}: ${what}\n`);
    return reason === "budget" ? EXIT.budget : EXIT.interrupted;
  }
  const code = exitCodeForStatus(report.status);
  const hint = () => withNote(resumeHint(runId, options.store));
  if (report.status === "interrupted" && report.stopped?.reason === "budget") {
    io.stderr.write(`${budgetStop(report, runId, options.store)}\n`);
    return EXIT.budget;
  }
  if (report.status === "interrupted" && report.stopped?.reason === "detached") {
    // Left on purpose: the provider's batches run on, and a resume collects them.
    io.stderr.write(
      `run ${runId} ${report.stopped.note}; ${report.counts.remaining} keys left. Collect them with: ${hint()}\n`,
    );
    return EXIT.ok;
  }
  if (report.status === "interrupted") {
    io.stderr.write(`interrupted; ${report.counts.remaining} keys left. Resume with: ${hint()}\n`);
  } else if (report.status === "errored") {
    io.stderr.write(`${report.counts.errored} keys ended in error. Re-run them with: ${hint()}\n`);
  }
  if (code !== EXIT.ok || options.failUnder === undefined) return code;
  // A scorer that scored nothing (every grader skipped) has no mean to hold against the bar; a
  // run in which no scorer scored anything has nothing to pass it with.
  const scoredAny = report.metrics.some((m) => m.mean !== null);
  const low = report.metrics.filter((m) =>
    m.mean === null ? !scoredAny : m.mean < options.failUnder!,
  );
  if (low.length === 0) return code;
  io.stderr.write(
    `below --fail-under ${options.failUnder}: ${low.map((m) => `${m.scorer} ${m.mean?.toFixed(4) ?? "-"}`).join(", ")}\n`,
  );
  return EXIT.belowThreshold;
}

/**
 * What a run stopped by its spend cap says: the spend against the cap, the keys left, and the
 * resume command with a higher cap: the run's total so far plus the keys left at its mean cost
 * per attempt, with a tenth more for margin (twice the cap when no attempt had a known cost).
 */
function budgetStop(report: RunReport, runId: string, store: string | undefined): string {
  const cap = report.budget!.maxCostUsd;
  const { attempts } = report.usage.totalSpent;
  const spent = report.usage.totalSpent.costUsd ?? 0;
  const left = report.counts.remaining;
  const estimate = spent > 0 && attempts > 0 ? (spent + (spent / attempts) * left) * 1.1 : 2 * cap;
  const higher = Math.max(Math.ceil(estimate * 100) / 100, cap + 0.01);
  const hint = resumeHint(runId, store);
  const command = { ...hint, command: `${hint.command} --max-cost ${higher.toFixed(2)}` };
  return (
    `${report.stopped!.note} on the run (the cap counts every invocation's spend); ${left} keys left. ` +
    `Resume with a higher cap (about $${higher.toFixed(2)} finishes it at the cost so far): ${withNote(command)}`
  );
}

/** Under a store-unwritable error: the spend it counts, and how to get the attempts back. */
function storeFailure(error: StetError, runId: string, store: string | undefined): string {
  const outcome = error.details?.fallback as FallbackOutcome | undefined;
  const resume = withNote(resumeHint(runId, store));
  if (!outcome) return `Once the store is writable again, resume with: ${resume}`;
  const restore = outcome.path === null ? "" : withNote(importHint(outcome.path, runId, store));
  return renderFallback(outcome, { import: restore, resume });
}

/** The command alone on its line (so it can be copied whole), any note on the next. */
function withNote(hint: ResumeHint): string {
  return hint.note === null ? hint.command : `${hint.command}\n  (${hint.note})`;
}

/** A provider batch's step, as the terminal says it. */
function batchLine(event: Extract<RunEvent, { type: "batch" }>): string {
  const id = event.batchId ?? event.nonce;
  const n = `${event.requests} request${event.requests === 1 ? "" : "s"}`;
  switch (event.phase) {
    case "submitted":
      return `batch ${id} submitted: ${n}`;
    case "adopted":
      return `batch ${id} adopted (submitted by an earlier execution): ${n}`;
    case "ended":
      return `batch ${id} ended: results of ${n} downloaded`;
    case "failed":
      return `batch ${id} failed: ${event.note ?? "no reason given"}`;
    case "abandoned":
      return `batch ${id} was never created at the provider: its ${n} go in a new batch`;
  }
}
