import { setMaxListeners } from "node:events";
import { addScoringUsage, addUsage, emptyUsage } from "../core/aggregate.js";
import { isStetError, StetError } from "../core/errors.js";
import type { JournalKeep, ModelCaller, Scorer, SolverFn } from "../core/eval.js";
import type { Progress, RunEvent, StopReason } from "../core/events.js";
import { keyString } from "../core/keys.js";
import type { Plan } from "../core/plan.js";
import { createSecretRedactor, type Secret } from "../core/secrets.js";
import type {
  Attempt,
  AttemptError,
  Key,
  OwnerIdentity,
  Run,
  Scoring,
  Usage,
} from "../core/types.js";
import type { Store } from "../store/types.js";
import { takenOver } from "./acquire.js";
import { AttemptWriter } from "./attempt-writer.js";
import { Budget, type SpendCap } from "./budget.js";
import { followStoredSpend } from "./stored-spend.js";
import { drain } from "./drain.js";
import { AttemptAborted, executeKey, type KeyTask } from "./execute-key.js";
import { executeScoring, type RescoreUnit } from "./execute-scoring.js";
import { fallbackDirs } from "./fallback-file.js";
import { startHeartbeat } from "./heartbeat.js";
import { watchMisconfiguration } from "./misconfiguration.js";
import { planSource, type KeySource } from "./lease-source.js";
import { heartbeatInterval } from "./owner.js";
import { summarizePlan, type ScoringKey } from "./report.js";

/** Options shared by starting and resuming a run. */
export interface ExecuteOptions {
  store: Store;
  /** Graceful stop: no new dispatches; in-flight attempts get `graceMs`, then are aborted. */
  signal?: AbortSignal;
  /**
   * Immediate stop: in-flight attempts are aborted at once (and not recorded). Its reason, when a
   * string, is the note the run is released with (the CLI's, when this process hit an unexpected
   * error); otherwise the note says a signal interrupted it.
   */
  abortSignal?: AbortSignal;
  graceMs?: number;
  onEvent?: (event: RunEvent) => void;
  heartbeatMs?: number;
  staleMs?: number;
  /** Backoff between retries of a failed store commit (tests shorten it). */
  storeRetryDelaysMs?: readonly number[];
  /**
   * The run's known secrets (API keys from the environment, the server's token, the store's
   * password): replaced in every attempt before it is written, with the solver's and scorers'
   * own (`secrets()`). See `runSecrets`.
   */
  secrets?: readonly Secret[];
}

export interface Execution {
  run: Run;
  owner: OwnerIdentity;
  plan: Plan;
  resumed: boolean;
  solver: SolverFn;
  scorers: readonly Scorer[];
  callModel?: ModelCaller;
  /**
   * Stored attempts to score again, before any key executes: a rescore's, or a resume's scorer
   * errors (their outputs stand; only the scorers run). `pass` names the scorings it makes.
   */
  rescore?: { units: readonly RescoreUnit[]; pass: string };
  /** The run's spend cap (`--max-cost`): on what the run's stored attempts and scorings cost. */
  cap?: SpendCap;
  /** The eval's journal retention, which `runs/` applies once the execution drained. */
  journalKeep?: JournalKeep;
  /**
   * Where the keys come from instead of the plan's `toExecute`: a distributed run's leases
   * (`LeaseSource`). Then `owner.token` is the worker's and the heartbeat extends its leases.
   */
  keys?: KeySource;
}

/** Why an execution stopped before its plan was done, and the note its run is released with. */
export interface StopCause {
  reason: Exclude<StopReason, "ownership-lost">;
  note: string;
  /** For `store-unwritable`: the failure, whose attempts went to the fallback file. */
  error?: StetError;
  /** For `misconfigured`: the error the first samples all failed with, and how many did. */
  misconfiguration?: { error: AttemptError; samples: number };
}

/** How an execution ended: what `runs/` needs to decide the run's status and report it. */
export interface ExecutionEnd {
  /** Null when every planned key was executed. */
  stopped: StopCause | null;
  /** Whether this invocation committed the attempt. */
  isNow(attempt: Key & { attempt: number }): boolean;
  /** The plan's fingerprint of a sample (the ones the outcomes count under). */
  fingerprintOf(sampleId: string): string | undefined;
  /** `performance.now()` when the execution began. */
  startedAt: number;
  /** How many scorings this invocation committed, and whether it committed a stored one. */
  scorings: { committed: number; isNow(scoring: ScoringKey): boolean };
  /**
   * The step journal in this invocation: steps replayed from interrupted executions, executions
   * whose replay diverged, and the usage of replayed chat calls (reused: in no attempt's usage).
   */
  journal: { replayed: number; diverged: number; reused: Usage[] };
}

/**
 * Executes a claimed run's plan: a pool of `concurrency` workers that refills a slot the moment
 * an attempt is committed, write-through via group commit, heartbeats (which also carry cancel
 * requests), graceful and immediate stops. Returns once every attempt it holds is committed (or
 * in the fallback file), still owning the run: releasing it with a status is the caller's
 * (`runs/`). Throws `E_FENCED` when another owner took the run over.
 *
 * A misconfigured endpoint stops it early (`watchMisconfiguration`: the first 3 samples of this
 * invocation failed alike with a configuration-class provider error, nothing succeeded). That
 * stop is graceful, like a signal's: no new dispatches, and in-flight attempts finish (within
 * the grace period) and are committed, because against such an endpoint they fail at once
 * anyway, and one that does finish has been paid for and stands.
 *
 * A spend cap (`exec.cap`) stops it the same way, without the grace period's abort (what is in
 * flight is being paid for): see `Budget` for the dispatch rule. The spend it holds against the
 * cap is read from the store before each dispatch (`followStoredSpend`): every attempt and
 * scoring of the run, whoever committed it, counted once.
 */
export async function executeRun(exec: Execution, options: ExecuteOptions): Promise<ExecutionEnd> {
  const { store } = options;
  const { run, owner, plan } = exec;
  const t0 = performance.now();
  const emit = options.onEvent ?? (() => {});
  const abort = new AbortController();
  // Every in-flight attempt listens on this one signal: as many listeners as the concurrency.
  setMaxListeners(0, abort.signal);
  let stopReason: StopReason | null = null;
  let stopNote = "";
  const stop = (reason: StopReason, now: boolean, note: string) => {
    if (!stopReason) {
      stopReason = reason;
      stopNote = note;
      emit({ type: "stopping", reason, inflight: progress.inflight, ...(note ? { note } : {}) });
    }
    if (now) abort.abort(new AttemptAborted("aborted by the run"));
  };
  /** Graceful: no new dispatches; in-flight attempts get the grace period, then are aborted. */
  const stopGracefully = (reason: "signal" | "cancel" | "misconfigured", note: string) => {
    stop(reason, false, note);
    const grace = setTimeout(
      () => abort.abort(new AttemptAborted("aborted by the run")),
      options.graceMs ?? 10_000,
    );
    grace.unref();
  };

  const writer = new AttemptWriter({
    store,
    runId: run.id,
    token: owner.token,
    fallbackDirs: fallbackDirs(store.fallbackDir),
    ...(options.storeRetryDelaysMs ? { retryDelaysMs: options.storeRetryDelaysMs } : {}),
    onRetry: (message, failures, retryInMs) =>
      emit({ type: "store-retry", message, failures, retryInMs }),
  });
  const stopHeartbeat = startHeartbeat({
    store,
    runId: run.id,
    token: owner.token,
    intervalMs: heartbeatInterval(options),
    onLost: () => stop("ownership-lost", true, "taken over by another process"),
    onCancel: (request) => stopGracefully("cancel", `cancelled (${request})`),
  });
  const onSignal = () => stopGracefully("signal", "interrupted by a signal");
  const onAbortSignal = () => {
    const reason: unknown = options.abortSignal?.reason;
    const note =
      typeof reason === "string"
        ? createSecretRedactor(options.secrets ?? []).text(reason).value
        : "interrupted by a signal";
    stop("signal", true, note);
  };
  options.signal?.addEventListener("abort", onSignal, { once: true });
  options.abortSignal?.addEventListener("abort", onAbortSignal, { once: true });

  const progress: Progress = {
    total: plan.total,
    done: plan.preserved,
    errored: plan.erroredKept,
    executed: 0,
    inflight: 0,
    spentNowUsd: 0,
    unpricedNow: 0,
    elapsedMs: 0,
  };
  const spentNow = emptyUsage();
  // Per key (sample index × epochs + epoch − 1), the first attempt number this invocation
  // committed: attempts are numbered in commit order, so "committed now" is "at least that".
  // Typed arrays and an index, not a set of key strings: a large run's report needs no more.
  const { epochs } = run.config;
  const indexOf = new Map(plan.samples.map((r, i) => [r.sample.id, i]));
  const firstNow = new Int32Array(plan.samples.length * epochs);
  const slot = (key: Key) => indexOf.get(key.sampleId)! * epochs + key.epoch - 1;
  const isNow = (a: Key & { attempt: number }) => {
    const first = indexOf.has(a.sampleId) ? firstNow[slot(a)]! : 0;
    return first > 0 && a.attempt >= first;
  };
  emit({
    type: "run-started",
    runId: run.id,
    evalName: run.evalName,
    resumed: exec.resumed,
    plan: summarizePlan(plan),
  });

  const redactor = createSecretRedactor([
    ...(options.secrets ?? []),
    ...(exec.solver.secrets?.() ?? []),
    ...exec.scorers.flatMap((scorer) => scorer.secrets?.() ?? []),
  ]);
  const budget = exec.cap ? new Budget(exec.cap) : undefined;
  const spend = budget ? followStoredSpend(store, run.id, budget) : undefined;
  /** Stops dispatching (reason `budget`) when one more key, beside `inflight` others, would not fit. */
  const overBudget = (inflight: number): boolean => {
    if (!budget || stopReason !== null || budget.verdict(inflight) === "dispatch") return false;
    stop("budget", false, `${budget.note()}; finishing the samples in flight`);
    return true;
  };
  const journal = { replayed: 0, diverged: 0, reused: [] as Usage[] };
  // Keys whose interrupted execution left open journal entries: one read per run, and only on
  // a resume. A changed sample's entries are of its old content: discarded, not replayed.
  const open = new Set<string>();
  const journaled = exec.solver.journal !== false;
  if (journaled && exec.resumed && !exec.keys) {
    for (const key of await store.journal.keys(run.id)) open.add(keyString(key));
  }
  const changed = new Set(plan.changed);
  const journalOf = async (key: Key, first: boolean): Promise<KeyTask["journal"]> => {
    if (!journaled) return undefined;
    // A worker may be handed a key that a worker that died (or froze and was fenced) had begun,
    // at any time: it reads the key's open entries as it leases it (one indexed read a key).
    const stale = first && (exec.keys !== undefined || open.has(keyString(key)));
    const replay = stale && !changed.has(key.sampleId);
    const entries = replay ? await store.journal.list(run.id, { ...key, attempt: "open" }) : [];
    return {
      entries,
      discardOpen: stale && !replay,
      write: (draft) => writer.writeStep(draft),
      onDone: (j) => {
        journal.replayed += j.replayed;
        journal.diverged += j.diverged;
        journal.reused.push(...j.reused);
      },
    };
  };
  const misconfigured = watchMisconfiguration();
  let misconfiguration: StopCause["misconfiguration"];
  /** A worker's view of the others' progress, from the run's open keys at its latest claim. */
  const seeOthers = () => {
    const open = exec.keys?.open?.();
    if (open === undefined) return;
    const others = plan.total - open - progress.done - progress.errored;
    progress.others = Math.max(progress.others ?? 0, others);
  };
  const onCommitted = (attempt: Attempt, final: boolean) => {
    if (firstNow[slot(attempt)] === 0) firstNow[slot(attempt)] = attempt.attempt;
    progress.executed++;
    addUsage(spentNow, attempt.usage);
    progress.spentNowUsd = spentNow.costUsd;
    progress.unpricedNow = spentNow.unpriced;
    if (attempt.status === "scored") progress.done++;
    else if (final) progress.errored++;
    progress.elapsedMs = performance.now() - t0;
    seeOthers();
    emit({ type: "attempt-committed", attempt, progress: { ...progress } });
    const verdict = misconfigured.observe(attempt);
    if (verdict && stopReason === null) {
      misconfiguration = verdict;
      const note = `stopped early: the first ${verdict.samples} samples failed alike: ${verdict.error.message}`;
      stopGracefully("misconfigured", note);
    }
  };

  // The scorings committed now, by identity: the report sums their stored rows as spent now.
  const scoredNow = new Set<string>();
  const scorings = {
    committed: 0,
    isNow: (scoring: ScoringKey) => scoredNow.has(scoringKey(scoring)),
  };
  /** A scoring's spend (a judge's) is this invocation's, whatever became of the key. */
  const countScoring = (scoring: Scoring) => {
    scorings.committed++;
    scoredNow.add(scoringKey(scoring));
    if (!scoring.usage) return;
    addScoringUsage(spentNow, scoring.usage);
    progress.spentNowUsd = spentNow.costUsd;
    progress.unpricedNow = spentNow.unpriced;
  };
  const onScored = (scoring: Scoring) => {
    countScoring(scoring);
    if (scoring.status === "scored") progress.done++;
    else progress.errored++;
    progress.elapsedMs = performance.now() - t0;
    emit({ type: "scoring-committed", scoring, progress: { ...progress } });
  };
  const pass = exec.rescore?.pass ?? `resume-${owner.token.slice(0, 12)}`;
  const score = async (unit: RescoreUnit): Promise<Scoring> => {
    progress.inflight++;
    try {
      const draft = await executeScoring({
        unit,
        scorers: exec.scorers,
        pass,
        callModel: exec.callModel,
        runId: run.id,
        ...(run.config.model === undefined ? {} : { model: run.config.model }),
        ...(run.config.timeoutMs === undefined ? {} : { timeoutMs: run.config.timeoutMs }),
        abort: abort.signal,
        redactor,
      });
      return await writer.writeScoring(draft);
    } finally {
      progress.inflight--;
    }
  };

  /** How a key's execution ended, for the key source (a worker's lease). */
  const runKey = async (key: Key): Promise<"scored" | "errored" | "abandoned"> => {
    const record = plan.samples[indexOf.get(key.sampleId)!]!;
    const rerunAfter = plan.rerunAfter.get(keyString(key));
    for (let i = 0; i <= run.config.retries; i++) {
      writer.markInflight(key);
      progress.inflight++;
      try {
        const draft = await executeKey({
          key,
          record,
          solver: exec.solver,
          scorers: exec.scorers,
          callModel: exec.callModel,
          runId: run.id,
          model: run.config.model,
          timeoutMs: run.config.timeoutMs,
          abort: abort.signal,
          redactor,
          journal: await journalOf(key, i === 0),
        });
        const attempt = await writer.write(
          rerunAfter === undefined ? draft : { ...draft, rerunAfter },
        );
        // A scorer that threw leaves the output standing: retries score it again, never re-solve.
        const scorerError = attempt.error?.type === "scorer";
        const warning = budget?.observe(attempt);
        // The retry's verdict below must see this attempt's cost: read once it is stored.
        if (spend && attempt.status !== "scored") await spend.look();
        const final =
          attempt.status === "scored" ||
          i === run.config.retries ||
          stopReason !== null ||
          scorerError ||
          overBudget(progress.inflight - 1);
        onCommitted(attempt, final && !(scorerError && i < run.config.retries));
        if (warning) emit({ type: "warning", code: "unpriced", message: warning });
        if (scorerError && i < run.config.retries) {
          const scored = await rescoreRetries(attempt, record, run.config.retries - i);
          return scored ? "scored" : "errored";
        }
        if (attempt.status === "scored") return "scored";
        // An error is the key's outcome once its retries ran out; a stop leaves it to a resume.
        if (final) return i === run.config.retries || scorerError ? "errored" : "abandoned";
      } finally {
        progress.inflight--;
      }
    }
    return "errored";
  };

  /**
   * A scorer error's retries: the scorers again on the stored output, up to `left` times. Whether
   * the key ended scored.
   */
  const rescoreRetries = async (
    attempt: Attempt,
    record: Plan["samples"][number],
    left: number,
  ): Promise<boolean> => {
    const unit: RescoreUnit = {
      key: attempt,
      attempt: attempt.attempt,
      record,
      output: attempt.output,
      current: attempt.scores,
      rerun: new Set(),
    };
    for (let i = 0; i < left && stopReason === null; i++) {
      const scoring = await score(unit);
      if (scoring.status === "scored" || i === left - 1) {
        onScored(scoring);
        return scoring.status === "scored";
      }
      // Not final: the key's error is counted once, by the last try.
      countScoring(scoring);
      unit.current = scoring.scores;
    }
    // Stopped before the retries ran out: the key's error stands, resume scores it again.
    progress.errored++;
    return false;
  };

  let fault: { error: unknown } | undefined;
  /**
   * An unexpected error (a bug, an event listener that threw) is the execution's fault: nothing
   * more is dispatched, what is in flight is aborted, and it is thrown once every slot ended and
   * the writer drained, so the caller releases the run with no attempt of this process still
   * running or committing.
   */
  const stopOn = (error: unknown) => {
    if (error instanceof AttemptAborted) return;
    if (writer.failure) {
      const fencedOut = writer.failure.code === "E_FENCED";
      stop(fencedOut ? "ownership-lost" : "store-unwritable", false, writer.failure.message);
      return;
    }
    if (fault) return;
    fault = { error };
    abort.abort(new AttemptAborted("aborted by the run"));
  };

  const keys = exec.keys ?? planSource(plan.toExecute);
  /** A key that a stop kept from dispatching goes back to its source. */
  const dispatch = (key: Key, go: boolean) => (go ? work(key) : keys.done(key, "abandoned"));
  const work = async (key: Key) => {
    let end: "scored" | "errored" | "abandoned" = "abandoned";
    try {
      end = await runKey(key);
    } catch (error) {
      stopOn(error);
    }
    try {
      // A worker's errored key settles its lease (the outcome is final); unless fenced meanwhile.
      await keys.done(key, writer.failure ? "abandoned" : end);
    } catch (error) {
      // Its lease was taken: this worker was presumed dead. Another failure leaves the lease to
      // end when the worker leaves (the key is then claimable, its error attempt stored).
      if (isStetError(error, "E_FENCED")) stop("ownership-lost", true, error.message);
    }
  };
  const stopped = () => stopReason !== null || fault !== undefined || overBudget(progress.inflight);
  const halted = () => stopReason !== null || fault !== undefined;
  const next = async () => {
    // Under a cap, a dispatch waits for a look at what the run's rows spent up to now.
    if (spend) await spend.look();
    try {
      const key = keys.next(halted);
      return key instanceof Promise ? await key : key;
    } catch (error) {
      // The store failed to give a key (after its retries): stop as a store failure does.
      storeFailed(error);
      return undefined;
    }
  };
  let claimFailure: StetError | undefined;
  const storeFailed = (error: unknown) => {
    const message = error instanceof Error ? error.message : String(error);
    stop("store-unwritable", false, message);
    claimFailure ??= error instanceof StetError ? error : new StetError("E_STORE", message);
  };
  try {
    // Without the run's spend, the cap cannot be held: nothing is dispatched.
    await spend?.start().catch(storeFailed);
    const units = (exec.rescore?.units ?? []).values();
    await drain(
      async () => {
        // A judge's scorings count against the cap too.
        if (spend) await spend.look();
        return units.next().value;
      },
      run.config.concurrency,
      stopped,
      async (unit, go) => {
        if (!go) return;
        try {
          onScored(await score(unit));
        } catch (error) {
          stopOn(error);
        }
      },
    );
    // Under a cap with no known cost yet, the first key goes alone: its cost is what the rest
    // are expected to cost.
    if (budget?.probing) await drain(next, 1, stopped, dispatch, 1);
    await drain(next, run.config.concurrency, stopped, dispatch);
    await writer.drain();
    // What the run spent once this invocation's last commit is in (the note of a stop at the cap).
    await spend?.look();
    if (fault) throw fault.error;
  } finally {
    stopHeartbeat();
    options.signal?.removeEventListener("abort", onSignal);
    options.abortSignal?.removeEventListener("abort", onAbortSignal);
  }

  if (stopReason === "ownership-lost") throw await takenOver(store, run.id);
  const end = {
    isNow,
    fingerprintOf: fingerprintIndex(plan, indexOf),
    startedAt: t0,
    scorings,
    journal,
  };
  if (writer.failure) {
    const note = writer.failure.message;
    return { ...end, stopped: { reason: "store-unwritable", note, error: writer.failure } };
  }
  if (claimFailure) {
    const note = claimFailure.message;
    return { ...end, stopped: { reason: "store-unwritable", note, error: claimFailure } };
  }
  const reason: StopReason | null = stopReason;
  if (reason === "misconfigured") {
    return { ...end, stopped: { reason, note: stopNote, misconfiguration: misconfiguration! } };
  }
  // The note says what the run's stored rows spent in the end, the in-flight keys' cost included.
  if (reason === "budget") return { ...end, stopped: { reason, note: budget!.note() } };
  return {
    ...end,
    stopped: reason === "signal" || reason === "cancel" ? { reason, note: stopNote } : null,
  };
}

function scoringKey(scoring: ScoringKey): string {
  return `${keyString(scoring)}#${scoring.attempt}#${scoring.scoring}`;
}

function fingerprintIndex(plan: Plan, indexOf: ReadonlyMap<string, number>) {
  return (sampleId: string) => {
    const i = indexOf.get(sampleId);
    return i === undefined ? undefined : plan.samples[i]!.fingerprint;
  };
}
