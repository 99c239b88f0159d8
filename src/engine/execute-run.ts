import type { BatchOptions } from "../core/batch.js";
import type { RunEvent } from "../core/events.js";
import type { CachePolicy, ModelCaller, JournalKeep, Scorer, SolverFn } from "../core/eval.js";
import type { KeyList } from "../core/key-list.js";
import { reuseSummaryOf } from "../core/reuse-plan.js";
import { listedKeys, type ExecutionPlan } from "../core/plan.js";
import type { RateLimits } from "../core/rate-limits.js";
import { createSecretRedactor, type Secret } from "../core/secrets.js";
import type { Key, OwnerIdentity, Run, Usage } from "../core/types.js";
import type { Store } from "../store/types.js";
import { takenOver } from "./acquire.js";
import { AttemptWriter } from "./attempt-writer.js";
import { BatchBroker } from "./batch-broker.js";
import type { SpendCap } from "./budget.js";
import type { RescoreUnit } from "./execute-scoring.js";
import { fallbackDirs } from "./fallback-file.js";
import { startHeartbeat } from "./heartbeat.js";
import { KeyJournals } from "./key-journal.js";
import { storedTrajectory } from "./stored-trajectory.js";
import { KeyRunner } from "./key-runner.js";
import { planSource, type KeySource } from "./lease-source.js";
import { watchMisconfiguration } from "./misconfiguration.js";
import { heartbeatInterval } from "./owner.js";
import { summarizePlan, type ScoringsNow } from "./report.js";
import { ReplyCache } from "./reply-cache.js";
import { RunProgress } from "./run-progress.js";
import { RateLimiter } from "./rate-limiter.js";
import { recordRateWaits } from "./rate-waits.js";
import { SpendGate } from "./spend-gate.js";
import { StopControl, type StopCause } from "./stop-control.js";
import { WorkerPool } from "./worker-pool.js";

export type { StopCause } from "./stop-control.js";

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
  /**
   * Awaited once the run is claimed and `run-started` emitted, before any key executes: what a
   * listener of the events must have done first (`--output` writes the file's back-fill from
   * the store there, so none of this invocation's commits can race it).
   */
  beforeExecute?: () => Promise<void>;
}

export interface Execution {
  run: Run;
  owner: OwnerIdentity;
  plan: ExecutionPlan;
  resumed: boolean;
  /**
   * The run had no stored attempt or scoring when this execution began (a new run, unseeded):
   * every row it ends with is this invocation's, so its report can come from the run's figures.
   */
  fresh?: boolean;
  solver: SolverFn;
  scorers: readonly Scorer[];
  callModel?: ModelCaller;
  /** The eval's reply cache policy (absent: no cache). */
  cache?: CachePolicy | undefined;
  /** Declared rate limits (the eval's `rateLimits`, `--rpm`/`--tpm`); endpoints' headers rule the rest. */
  rateLimits?: RateLimits | undefined;
  /** Provider batches (`--batch`): the keys' model calls go through them (see BatchBroker). */
  batch?: Required<BatchOptions> | undefined;
  /**
   * `--detach` (with `batch`): once every key waits on a batch the provider created, the
   * execution stops (a `detached` stop) and leaves the batches to a later resume.
   */
  detach?: boolean;
  /**
   * Stored attempts to score again, before any key executes: a rescore's, or a resume's scorer
   * errors (their outputs stand; only the scorers run). `pass` names the scorings it makes.
   */
  rescore?: {
    /** A rescore's are read from the store as the pool takes them (`AsyncIterable`). */
    units: Iterable<RescoreUnit> | AsyncIterable<RescoreUnit>;
    pass: string;
    /** The eval's journal retention, which says why a stored attempt has no trajectory. */
    journalKeep?: JournalKeep | undefined;
  };
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

/** How an execution ended: what `runs/` needs to decide the run's status and report it. */
export interface ExecutionEnd {
  /** Null when every planned key was executed. */
  stopped: StopCause | null;
  /** Whether this invocation committed the attempt. */
  isNow(attempt: Key & { attempt: number }): boolean;
  /** The same, its sample's place given (see RunProgress.isNowAt): a paged report's question. */
  isNowAt(index: number | undefined, attempt: Key & { attempt: number }): boolean;
  /** The plan's fingerprint of a sample (the ones the outcomes count under). */
  fingerprintOf(sampleId: string): string | undefined;
  /** `performance.now()` when the execution began. */
  startedAt: number;
  /** How many scorings this invocation committed, and what they spent (see RunProgress). */
  scorings: ScoringsNow;
  /**
   * The step journal in this invocation: steps replayed from earlier executions, executions
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
  const emit = options.onEvent ?? (() => {});
  const counts = new RunProgress(
    plan,
    run.config.epochs,
    emit,
    exec.keys?.open?.bind(exec.keys),
    exec.fresh === true && listedKeys(plan) === undefined,
  );
  const { progress } = counts;
  const stops = new StopControl({
    emit,
    inflight: () => progress.inflight,
    graceMs: options.graceMs,
  });
  const writer = attemptWriter(exec, options, emit);
  // Made once the journals are open; a cancel that comes before finds none to cancel.
  const made: { batches?: BatchBroker } = {};
  const stopHeartbeat = startHeartbeat({
    store,
    runId: run.id,
    token: owner.token,
    intervalMs: heartbeatInterval(options),
    onLost: () => stops.stop("ownership-lost", true, "taken over by another process"),
    onCancel: (request) => {
      stops.gracefully("cancel", `cancelled (${request})`);
      // The provider's batches still running are cancelled too: nothing more is bought.
      void made.batches?.cancelOpen();
    },
  });
  const unlisten = stops.listen(options.signal, options.abortSignal, options.secrets);
  emit({
    type: "run-started",
    runId: run.id,
    evalName: run.evalName,
    resumed: exec.resumed,
    plan: summarizePlan(plan),
    ...(run.config.reuse && !exec.resumed ? { reuse: reuseSummaryOf(run.config.reuse) } : {}),
  });

  const journals = await KeyJournals.open({
    store,
    runId: run.id,
    plan,
    writer,
    journaled: exec.solver.journal !== false,
    resumed: exec.resumed,
    leased: exec.keys?.shared === true,
  });
  const gate = exec.cap ? new SpendGate(store, run.id, exec.cap, stops) : undefined;
  const { limiter, rateWaits } = rateLimiting(exec, store, counts);
  const batches = await batchBroker(exec, store, stops, gate, emit);
  made.batches = batches;
  const misconfigured = watchMisconfiguration();
  let misconfiguration: StopCause["misconfiguration"];
  const runner = new KeyRunner({
    run,
    plan,
    solver: exec.solver,
    scorers: exec.scorers,
    callModel: exec.callModel,
    cache: exec.cache && new ReplyCache(store.cache, exec.cache),
    rateGate: limiter,
    batches,
    pass: exec.rescore?.pass ?? `resume-${owner.token.slice(0, 12)}`,
    writer,
    counts,
    stops,
    gate,
    journals,
    trajectory: (unit) =>
      storedTrajectory(
        {
          store,
          runId: run.id,
          journaled: exec.solver.journal !== false,
          keep: exec.journalKeep ?? exec.rescore?.journalKeep,
        },
        unit,
      ),
    redactor: createSecretRedactor([
      ...(options.secrets ?? []),
      ...(exec.solver.secrets?.() ?? []),
      ...exec.scorers.flatMap((scorer) => scorer.secrets?.() ?? []),
    ]),
    committed: (attempt, final, key) => {
      counts.attemptCommitted(attempt, final, key);
      const verdict = misconfigured.observe(attempt);
      if (verdict && stops.reason === null) {
        misconfiguration = verdict;
        const note = `stopped early: the first ${verdict.samples} samples failed alike: ${verdict.error.message}`;
        stops.gracefully("misconfigured", note);
      }
    },
    emit,
  });
  const pool = new WorkerPool<RescoreUnit>({
    keys: exec.keys ?? planSource(keysOf(plan)),
    // Batched keys wait on their batch, not on a slot: all of them are dispatched at once.
    concurrency: batches
      ? Math.max(run.config.concurrency, plan.toExecute.length)
      : run.config.concurrency,
    stops,
    gate,
    inflight: () => progress.inflight,
    writeFailure: () => writer.failure,
    runKey: batches
      ? (key) => {
          batches.keyStarted();
          return runner.run(key).finally(() => batches.keyEnded());
        }
      : (key) => runner.run(key),
    score: async (unit) => counts.scoringCommitted(await runner.score(unit)),
  });
  try {
    await options.beforeExecute?.();
    await pool.run(exec.rescore?.units ?? []);
    await writer.drain();
    // What the run spent once this invocation's last commit is in (the note of a stop at the cap).
    await gate?.look();
    if (pool.fault) throw pool.fault.error;
  } finally {
    stopHeartbeat();
    unlisten();
    limiter.close();
    await rateWaits.stop();
  }

  if (stops.reason === "ownership-lost") throw await takenOver(store, run.id);
  const end = {
    isNow: counts.isNow,
    isNowAt: counts.isNowAt,
    fingerprintOf: counts.fingerprintOf,
    startedAt: counts.startedAt,
    scorings: counts.scorings,
    journal: journals.counts,
  };
  const failure = writer.failure ?? pool.claimFailure;
  if (failure) {
    return {
      ...end,
      stopped: { reason: "store-unwritable", note: failure.message, error: failure },
    };
  }
  return { ...end, stopped: stopCause(stops, misconfiguration, gate) };
}

/** The keys a plan lists: an execution whose plan only counts them takes them from `keys`. */
function keysOf(plan: ExecutionPlan): KeyList {
  const keys = listedKeys(plan);
  if (keys) return keys;
  throw new Error("a plan that only counts its keys executes from Execution.keys");
}

/** The stop of an execution whose store stayed writable: null when its plan was done. */
function stopCause(
  stops: StopControl,
  misconfiguration: StopCause["misconfiguration"],
  gate: SpendGate | undefined,
): StopCause | null {
  const reason = stops.reason;
  if (reason === "misconfigured") {
    return { reason, note: stops.note, misconfiguration: misconfiguration! };
  }
  // The note says what the run's stored rows spent in the end, the in-flight keys' cost included.
  if (reason === "budget") return { reason, note: gate!.budget.note() };
  return reason === "signal" || reason === "cancel" || reason === "detached"
    ? { reason, note: stops.note }
    : null;
}

/**
 * The execution's provider batches (`exec.batch`; undefined without). With `exec.detach`, the
 * execution stops (`detached`, at once) once every key waits on a batch the provider created.
 */
async function batchBroker(
  exec: Execution,
  store: Store,
  stops: StopControl,
  gate: SpendGate | undefined,
  emit: (event: RunEvent) => void,
): Promise<BatchBroker | undefined> {
  if (!exec.batch) return undefined;
  return BatchBroker.open({
    store,
    runId: exec.run.id,
    settings: exec.batch,
    expected: exec.plan.toExecute.length,
    dispatching: () => stops.reason === null && gate?.probing !== true,
    probing: () => stops.reason === null && gate?.probing === true,
    abort: stops.signal,
    events: emit,
    ...(exec.detach
      ? { detached: (n: number) => stops.stop("detached", true, detachNote(n)) }
      : {}),
  });
}

/** The note a detached run is left with: what it waits on. */
function detachNote(batches: number): string {
  return `detached: waiting on ${batches} provider batch${batches === 1 ? "" : "es"}`;
}

/** The run's write-through writer, reporting its store retries as events. */
function attemptWriter(
  exec: Execution,
  options: ExecuteOptions,
  emit: (event: RunEvent) => void,
): AttemptWriter {
  const { store } = options;
  return new AttemptWriter({
    store,
    runId: exec.run.id,
    token: exec.owner.token,
    fallbackDirs: fallbackDirs(store.fallbackDir),
    ...(options.storeRetryDelaysMs ? { retryDelaysMs: options.storeRetryDelaysMs } : {}),
    onRetry: (message, failures, retryInMs) =>
      emit({ type: "store-retry", message, failures, retryInMs }),
  });
}

/** The run's rate limiter (declared limits, learned ones, the store's shared budget) and the recorder of its waits. */
function rateLimiting(exec: Execution, store: Store, counts: RunProgress) {
  const limiter = new RateLimiter({
    limits: exec.rateLimits ?? {},
    budget: store.rates,
    salt: () => store.cache.salt(),
    onWaiting: (waiting) => counts.rateWaiting(waiting),
  });
  return { limiter, rateWaits: recordRateWaits(store, exec.run.id, exec.owner.token, limiter) };
}
