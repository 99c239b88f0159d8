import { isStetError } from "../core/errors.js";
import type { Progress, RunEvent, RunReport } from "../core/events.js";
import { EXIT, exitCodeForError, exitCodeForStatus } from "./exit-codes.js";
import type { Io } from "./io.js";
import { formatCost, formatDuration, table } from "./render/format.js";
import { createProgress } from "./render/progress.js";
import { trapSignals } from "./signals.js";

/** One run of a benchmark invocation: its label (the model) and how to execute it. */
export interface ManyEntry {
  label: string;
  /** Executes the run; null when it has nothing to execute (a finished run of the benchmark). */
  execute:
    | ((controls: {
        signal: AbortSignal;
        abortSignal: AbortSignal;
        onEvent: (event: RunEvent) => void;
      }) => Promise<RunReport>)
    | null;
  /** The run's stored report, for a run that executes nothing now. */
  report?: RunReport;
}

export interface ManyOptions {
  json: boolean;
  failUnder?: number;
  /** The command that resumes every unfinished run of the benchmark. */
  resumeCommand: string;
  benchmarkId: string;
}

/** How one run of the benchmark ended: its report, or the error that stopped it. */
type Ending = { label: string; report: RunReport } | { label: string; error: unknown };

/**
 * Runs of one benchmark executed at once in this process, with one terminal: a line per run as
 * it starts, one progress line over all of them, one set of signal handlers (the first SIGINT
 * stops every run gracefully, the second aborts them), then one comparison table. A run that
 * fails (its endpoint refused it, say) does not stop the others. The exit code is the most severe
 * of the runs' (a signal, the spend cap, a fatal error, errored keys, a score below
 * `failUnder`, in that order).
 */
export async function runManyWithUi(
  io: Io,
  options: ManyOptions,
  entries: readonly ManyEntry[],
): Promise<number> {
  io.say(
    `benchmark ${options.benchmarkId} · ${entries.length} runs · resume them together with: ${options.resumeCommand}`,
  );
  const progress = createProgress(io.stderr);
  const latest = new Map<number, Progress>();
  const signals = trapSignals((signal) => {
    progress.done();
    io.stderr.write(
      `\n${signal}: finishing every run's in-flight samples (press Ctrl-C again to abort them now)…\n`,
    );
  });
  const onEvent = (index: number) => (event: RunEvent) => {
    switch (event.type) {
      case "run-started":
        progress.done();
        io.say(
          `run ${event.runId} · ${event.evalName} · ${entries[index]!.label} · ${event.plan.total} keys` +
            (event.resumed ? ` (${event.plan.toExecute} to execute)` : ""),
        );
        // Counted in the progress line from its start, so the line's total is every run's.
        latest.set(index, {
          total: event.plan.total,
          done: event.plan.preserved,
          errored: event.plan.erroredKept,
          executed: 0,
          inflight: 0,
          spentNowUsd: 0,
          unpricedNow: 0,
          elapsedMs: 0,
        });
        break;
      case "attempt-committed":
      case "scoring-committed":
        latest.set(index, event.progress);
        progress.update(sumProgress([...latest.values()]));
        break;
      case "warning":
        progress.done();
        io.stderr.write(`stet: warning (${entries[index]!.label}): ${event.message}\n`);
        break;
      default:
        break;
    }
  };
  let endings: Ending[];
  try {
    endings = await Promise.all(
      entries.map(async (entry, index): Promise<Ending> => {
        if (entry.execute === null) return { label: entry.label, report: entry.report! };
        try {
          const controls = {
            signal: signals.stop,
            abortSignal: signals.abort,
            onEvent: onEvent(index),
          };
          return { label: entry.label, report: await entry.execute(controls) };
        } catch (error) {
          return { label: entry.label, error };
        }
      }),
    );
  } finally {
    signals.release();
    progress.done();
  }
  if (options.json) {
    const runs = endings.map((e) =>
      "report" in e
        ? { model: e.label, report: e.report }
        : { model: e.label, error: errorMessage(e.error) },
    );
    io.stdout.write(`${JSON.stringify({ benchmarkId: options.benchmarkId, runs }, null, 2)}\n`);
  } else io.say(comparisonTable(options.benchmarkId, endings));
  return finalCode(io, options, endings);
}

/** The progress of several runs as one: counts summed, the longest elapsed time. */
function sumProgress(all: readonly Progress[]): Progress {
  const priced = all.filter((p) => p.spentNowUsd !== null);
  return {
    total: sum(all, (p) => p.total),
    done: sum(all, (p) => p.done),
    errored: sum(all, (p) => p.errored),
    executed: sum(all, (p) => p.executed),
    inflight: sum(all, (p) => p.inflight),
    spentNowUsd: priced.length === 0 ? null : sum(priced, (p) => p.spentNowUsd!),
    unpricedNow: sum(all, (p) => p.unpricedNow),
    elapsedMs: Math.max(...all.map((p) => p.elapsedMs)),
  };
}

/**
 * One row per run: model, run, status, each scorer's mean with its 95 % interval
 * (mean ± 1.96 standard errors, clipped to [0, 1]), errored keys, what the run has spent in all,
 * and this invocation's wall time.
 */
function comparisonTable(benchmarkId: string, endings: readonly Ending[]): string {
  const scorers = [
    ...new Set(
      endings.flatMap((e) => ("report" in e ? e.report.metrics.map((m) => m.scorer) : [])),
    ),
  ];
  const header = ["model", "run", "status", ...scorers, "errors", "spend", "time"];
  const rows = endings.map((e) => {
    if (!("report" in e))
      return [
        e.label,
        "—",
        `failed: ${errorMessage(e.error)}`,
        ...scorers.map(() => "—"),
        "—",
        "—",
        "—",
      ];
    const { report } = e;
    return [
      e.label,
      report.runId,
      report.status,
      ...scorers.map((scorer) => interval(report.metrics.find((m) => m.scorer === scorer))),
      String(report.counts.errored),
      formatCost(report.usage.totalSpent),
      formatDuration(report.wallMs),
    ];
  });
  const numeric = header.map((_, i) => i >= 3);
  return `benchmark ${benchmarkId}\n${table([header, ...rows], numeric)}`;
}

function interval(metric: { mean: number | null; stderr: number | null } | undefined): string {
  if (!metric || metric.mean === null) return "—";
  if (metric.stderr === null) return metric.mean.toFixed(3);
  const low = Math.max(0, metric.mean - 1.96 * metric.stderr);
  const high = Math.min(1, metric.mean + 1.96 * metric.stderr);
  return `${metric.mean.toFixed(3)} [${low.toFixed(2)}, ${high.toFixed(2)}]`;
}

/** Exit-code severity, most severe first: what the benchmark's exit code is when runs differ. */
const SEVERITY = [EXIT.interrupted, EXIT.budget, EXIT.fatal, EXIT.runActive, EXIT.errored];

function finalCode(io: Io, options: ManyOptions, endings: readonly Ending[]): number {
  const codes = endings.map((e) => {
    if (!("report" in e)) {
      io.stderr.write(`stet: ${e.label}: ${errorMessage(e.error)}\n`);
      return isStetError(e.error) ? exitCodeForError(e.error.code) : EXIT.fatal;
    }
    return e.report.status === "interrupted" && e.report.stopped?.reason === "budget"
      ? EXIT.budget
      : exitCodeForStatus(e.report.status);
  });
  const worst = SEVERITY.find((code) => codes.includes(code));
  if (worst !== undefined) {
    io.stderr.write(`not every run finished. Resume them all with: ${options.resumeCommand}\n`);
    return worst;
  }
  if (options.failUnder === undefined) return EXIT.ok;
  const low = endings.flatMap((e) =>
    "report" in e
      ? e.report.metrics
          .filter((m) => m.mean !== null && m.mean < options.failUnder!)
          .map((m) => `${e.label} ${m.scorer} ${m.mean!.toFixed(4)}`)
      : [],
  );
  if (low.length === 0) return EXIT.ok;
  io.stderr.write(`below --fail-under ${options.failUnder}: ${low.join(", ")}\n`);
  return EXIT.belowThreshold;
}

function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

function sum<T>(items: readonly T[], of: (item: T) => number): number {
  return items.reduce((total, item) => total + of(item), 0);
}
