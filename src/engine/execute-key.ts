import type { ModelCaller, Scorer, SolverFn } from "../core/eval.js";
import type { BatchChannel } from "../core/batch.js";
import type { Json } from "../core/json.js";
import { normalizeSolverReturn } from "../core/normalize.js";
import { trajectoryOf } from "../core/trajectory.js";
import { addUsage as addUsages } from "../core/usage.js";
import type { Redactor } from "../core/secrets.js";
import type { AttemptDraft, AttemptError, Key, SampleRecord, Score, Usage } from "../core/types.js";
import type { JournalEntry, StepDiscard, StepDraft } from "../store/types.js";
import { attemptRedaction, type AttemptRedaction } from "./attempt-redaction.js";
import { AttemptAborted, solverError, untilAborted, withTimeout } from "./attempt-signal.js";
import { ClockSet, type TimeoutClock } from "./pausable-timer.js";
import { SampleBudget } from "./sample-budget.js";
import { limitedSolve } from "./limited-solve.js";
import type { SampleLimits } from "../core/limits.js";
import type { ReplyCache } from "./reply-cache.js";
import type { RateGate } from "../core/rate-limits.js";
import { scoreOutput } from "./score-output.js";
import { NOT_JOURNALED } from "./stored-trajectory.js";
import { context, type Spent } from "./solver-context.js";
import { StepJournal } from "./step-journal.js";

export interface KeyTask {
  key: Key;
  record: SampleRecord;
  solver: SolverFn;
  scorers: readonly Scorer[];
  /** What `ctx.chat` calls (see SolverContext.chat). */
  callModel?: ModelCaller | undefined;
  runId: string;
  model?: string;
  timeoutMs?: number;
  /** The eval's per-sample limits: reaching one ends the attempt scored on its output so far. */
  limits?: SampleLimits | undefined;
  /** The run's reply cache (the eval's `cache`; absent: none). */
  cache?: ReplyCache | undefined;
  /** The run's rate limits (absent: none). */
  rateGate?: RateGate | undefined;
  /** The run's provider batches (`--batch`; absent: none). */
  batch?: BatchChannel | undefined;
  /** Aborts the attempt at once (second Ctrl-C, grace expired, ownership lost). */
  abort: AbortSignal;
  /**
   * The run's known secrets, replaced in everything the solver and scorers return (with the key
   * and header values of the attempt's `ctx.chat` calls, learnt as each call is made).
   */
  redactor?: Redactor | undefined;
  /**
   * Journals `ctx.step` and `ctx.chat` (absent: they run unjournaled). `entries` are those to
   * replay (the key's open ones, or an errored attempt's); `onDone` learns what the journal replayed once the attempt ends.
   */
  journal?: {
    entries: readonly JournalEntry[];
    /** The key has open entries that are not to be replayed: the first write discards them. */
    discardOpen?: boolean;
    /** `entries` are an errored attempt's: written again as this execution's (StepJournal). */
    reopen?: boolean;
    write: (draft: StepDraft | StepDiscard) => Promise<void>;
    onDone?: (journal: StepJournal) => void;
  };
}

/**
 * Executes one key: the solver, then each scorer. Expected failure is data: a throwing solver,
 * a provider error, a timeout or a throwing scorer give an error draft, never an exception; a
 * throwing scorer's draft keeps the other scorers' scores and everything the scorers spent.
 * Only an abort by the run throws (`AttemptAborted`).
 */
export async function executeKey(task: KeyTask): Promise<AttemptDraft> {
  const startedAt = new Date();
  const t0 = performance.now();
  // A batched key's waits on its batch count against neither its timeout nor its wallMs limit.
  const clocks = task.batch ? new ClockSet() : undefined;
  return withTimeout(task, (signal, clock) => {
    if (!clocks) return attempt(task, signal, startedAt, t0);
    if (clock) clocks.add(clock);
    const batch = paused(task.batch!, clocks);
    return attempt({ ...task, batch }, signal, startedAt, t0, clocks);
  });
}

/**
 * A key's way into the run's batches with its clocks stopped while it waits: a batch may take up
 * to its window (24 hours), which is not the sample's own time.
 */
function paused(channel: BatchChannel, clock: TimeoutClock): BatchChannel {
  return {
    send: async (call, signal) => {
      clock.pause();
      try {
        return await channel.send(call, signal);
      } finally {
        clock.resume();
      }
    },
  };
}

async function attempt(
  task: KeyTask,
  signal: AbortSignal,
  startedAt: Date,
  t0: number,
  clocks?: ClockSet,
): Promise<AttemptDraft> {
  const spent: Spent = { usage: [], retries: 0 };
  // The run's secrets, and from the moment a ctx.chat call names its own key, that key too.
  const scrub = attemptRedaction(task.redactor);
  const journal = task.journal && journalOf(task.key, task.journal, scrub);
  const budget = task.limits && new SampleBudget(task.limits, spent.usage);
  const ctx = context(task, signal, spent, journal, scrub);
  let output: Json = null;
  let usage: Usage | null = null;
  let transcript: Json = null;
  let reported = 0;
  const scores: Score[] = [];
  let error: AttemptError | null = null;
  try {
    const returned = await untilAborted(
      budget
        ? limitedSolve(
            budget,
            signal,
            t0,
            (limited) =>
              task.solver(
                task.record.sample,
                context(task, limited, spent, journal, scrub, budget),
              ),
            clocks,
          )
        : Promise.resolve().then(() => task.solver(task.record.sample, ctx)),
      signal,
    );
    const result = normalizeSolverReturn(returned);
    // Before the scorers see it: a judge must not be sent a key the endpoint echoed either.
    output = scrub.json(result.output);
    usage = result.usage ?? null;
    transcript = scrub.json(result.transcript ?? null);
    reported = result.retries ?? 0;
  } catch (thrown) {
    // A limit ended the solver, which did not return its output so far: scored on none. The
    // run's abort still throws (solverError), as for any attempt.
    if (budget?.reached && !(signal.reason instanceof AttemptAborted)) output = "";
    else error = solverError(thrown, signal);
  }
  if (!error) {
    const trajectory = journal
      ? trajectoryOf(journal.trail)
      : ({ known: false, reason: NOT_JOURNALED } as const);
    const scored = await scoreOutput(
      task.record.sample,
      output,
      task.scorers,
      ctx,
      signal,
      trajectory,
    );
    scores.push(...scored.scores);
    spent.usage.push(...scored.spent);
    error = scored.error;
  }
  // Entries of the interrupted execution that this one never reached are not its trajectory.
  await journal?.finish();
  const completedAt = new Date();
  if (error) error = { ...error, message: scrub.text(error.message) };
  const draft = draftOf(task, {
    output,
    scores: scrub.scores(scores),
    usage: spent.usage.reduce<Usage | null>(addUsage, usage),
    transcript,
    error,
    // Counted now, whatever became of the attempt: a call that failed after retrying re-sent too.
    retries: spent.retries + reported,
    startedAt,
    completedAt,
    durationMs: Math.round(performance.now() - t0),
  });
  if (scrub.found.size > 0) draft.redacted = [...scrub.found].sort();
  if (budget?.reached) draft.limit = budget.reached;
  if (journal) task.journal?.onDone?.(journal);
  return draft;
}

function journalOf(
  key: Key,
  options: NonNullable<KeyTask["journal"]>,
  scrub: AttemptRedaction,
): StepJournal {
  return new StepJournal({
    key,
    entries: options.entries,
    discardOpen: options.discardOpen ?? false,
    reopen: options.reopen ?? false,
    write: options.write,
    redact: scrub.entry,
  });
}

interface DraftParts {
  output: Json;
  scores: Score[];
  usage: Usage | null;
  transcript: Json;
  error: AttemptError | null;
  retries: number;
  startedAt: Date;
  completedAt: Date;
  durationMs: number;
}

function draftOf(task: KeyTask, parts: DraftParts): AttemptDraft {
  const { error } = parts;
  // Fields listed, not `...task.key`: spreading a 2-field object into a 14-field literal builds
  // out-of-object property stores, and at thousands of attempts a second that garbage was
  // promoted to the old generation (hundreds of MB of RSS on a 100,000-sample run).
  return {
    sampleId: task.key.sampleId,
    epoch: task.key.epoch,
    status: error ? "error" : "scored",
    output: parts.output,
    scores: parts.scores,
    // Model calls through ctx.chat were paid for, whatever became of the attempt.
    usage: parts.usage,
    transcript: parts.transcript,
    error,
    startedAt: parts.startedAt.toISOString(),
    completedAt: parts.completedAt.toISOString(),
    durationMs: parts.durationMs,
    fingerprint: task.record.fingerprint,
    provenance: { kind: "executed" },
    retries: parts.retries,
  };
}

/**
 * Two parts of an attempt's usage added (see core/usage.ts): tiers and the reused part summed; the
 * sum has a cost only when every part that used tokens had one.
 */
export const addUsage = addUsages;
