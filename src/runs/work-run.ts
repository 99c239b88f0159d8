import { withFlagLimit, type RateLimit } from "../core/rate-limits.js";
import { countedPlan, listedKeys } from "../core/plan.js";
import { describeBound, parseBounded } from "../core/bounds.js";
import { StetError } from "../core/errors.js";
import type { RunReport } from "../core/events.js";
import type { Run, RunStatus } from "../core/types.js";
import type { Execution, ExecuteOptions, ExecutionEnd } from "../engine/execute-run.js";
import { executeRun } from "../engine/execute-run.js";
import { budgetNote } from "../engine/budget.js";
import { countedResume } from "../engine/figures-report.js";
import { LeaseSource } from "../engine/lease-source.js";
import { LeasedSnapshot } from "../engine/leased-snapshot.js";
import { SnapshotWindow } from "../engine/snapshot-window.js";
import { DEFAULT_STALE_MS, heartbeatInterval, newOwnerIdentity } from "../engine/owner.js";
import { buildReport, storedReport, summarizePlan } from "../engine/report.js";
import { keyString } from "../core/keys.js";
import {
  requireLeases,
  type AttemptHead,
  type RunNote,
  type Store,
  type WorkerIdentity,
} from "../store/types.js";
import type { LoadedEvalFile } from "../eval/load-eval-file.js";
import type { EvalLookup } from "./find-eval.js";
import { liveWorkers, workerId } from "./run-workers.js";
import { requireRun } from "./require-run.js";
import {
  planResume,
  type PlannedResume,
  type ResumeEval,
  type ResumePlanning,
} from "./resume-run.js";
import { resumeCap } from "./spend-cap.js";
import { executionReport, withStoredSpend } from "./run-execution.js";
import { runSecrets } from "./run-secrets.js";
import { settledStatus } from "./run-status.js";

/** How long a worker's leases live without a heartbeat, unless `STET_LEASE_MS` says otherwise. */
export const DEFAULT_LEASE_MS = 30_000;

/**
 * The lease time from `STET_LEASE_MS` (ms, within its bound: 100 ms to a day), else the default;
 * a bad value is a usage error.
 *
 * @example leaseTime({ STET_LEASE_MS: "5000" }) // 5000
 */
export function leaseTime(env: Readonly<Record<string, string | undefined>> = process.env): number {
  const text = env.STET_LEASE_MS;
  if (text === undefined || text === "") return DEFAULT_LEASE_MS;
  const ms = parseBounded("leaseMs", text);
  if (ms === undefined) {
    throw new StetError(
      "E_USAGE",
      `STET_LEASE_MS must be ${describeBound("leaseMs")}; got ${JSON.stringify(text)}`,
    );
  }
  return ms;
}

/**
 * The stale limit to open a worker's store with: at most its lease time, so that a worker frozen
 * in the middle of a write (holding its keys' lease rows, or the run's row) has its PostgreSQL
 * session ended, and its locks released, before its leases would be taken over.
 *
 * @example workerStaleLimit({}, 2_000) // { staleMs: 2000 }
 */
export function workerStaleLimit(
  stale: { staleMs?: number },
  leaseMs: number,
): { staleMs: number } {
  return { staleMs: Math.min(stale.staleMs ?? DEFAULT_STALE_MS, leaseMs) };
}

export interface WorkOptions extends ExecuteOptions {
  runId: string;
  /** The eval to execute with; default the one `findEval` finds for the run. */
  eval?: ResumeEval;
  evalFile?: string;
  registry?: EvalLookup;
  /** Execute only a registered eval, never a file from elsewhere (a server's rule). */
  onlyRegistered?: boolean;
  /** A registered eval asked for by name instead of the run's (see FindEvalOptions). */
  loaded?: LoadedEvalFile;
  /** How long loading the eval module may take (`--load-timeout`). */
  loadTimeoutMs?: number;
  /** Keys this worker executes at once; default the run's concurrency. */
  concurrency?: number;
  /** A spend cap on the run's total (all workers' spend) for this worker; default the run's. */
  maxCost?: number;
  /** `--cache` / `--no-cache`: overrides the eval's `cache` for this worker. */
  cache?: boolean;
  /** `--rpm` / `--tpm`: the main model's rate limit for this worker (see withFlagLimit). */
  rateLimit?: RateLimit;
  /**
   * A dataset file of at least `minBytes` is not loaded: the worker plans from the run's figures,
   * the file (unless it still has the run's stamp) compared with the snapshot a page at a time,
   * and finds its leased keys in the snapshot (see `planResume`'s `paged`).
   */
  paged?: { minBytes: number };
  /** Default `leaseTime()`. */
  leaseMs?: number;
  /**
   * A resume: a distributed run that is interrupted or errored is opened to workers again first
   * (its keys without a scored attempt become claimable).
   */
  reopen?: boolean;
  /** Set by `startDistributed`: the worker that created the run (its plan is not a resume's). */
  created?: boolean;
  /**
   * Set by `startDistributed` with `eval`: the run was created from its dataset's pages, which
   * `eval` does not hold (its samples are empty): the plan counts its keys from the figures.
   */
  fromPages?: boolean;
  /** Called once the worker has registered and made its first claim. */
  onJoined?: (joined: JoinedWorker) => void;
}

/** A worker that joined a run: what its start-up line says. */
export interface JoinedWorker {
  runId: string;
  /** A short id of the worker (its token's first 8 characters). */
  workerId: string;
  concurrency: number;
  leaseMs: number;
  /** How long the first claim took, and how many keys it got. */
  firstClaimMs: number;
  firstClaimKeys: number;
}

/**
 * Joins a distributed run as a worker and executes keys leased to it until none is left for it
 * (every key has its outcome, or the rest are other live workers'), or it is stopped (a signal,
 * `stet cancel`, the spend cap). Keys are claimed a batch at a time (`LeaseSource`); the worker's
 * heartbeat extends its leases; each commit is fenced by the key's lease, so a worker whose
 * leases expired (frozen past `leaseMs`) writes nothing more and fails with `E_FENCED`.
 *
 * When the worker leaves, the run is settled by the status rule (`settledStatus`) if this worker
 * is the last: completed, errored (every key has its outcome, some an error) or interrupted (cut
 * short, with no live worker left). Otherwise the run stays running for the others.
 *
 * @example const report = await workRun({ store, runId: "r_abc", concurrency: 8 });
 */
export async function workRun(options: WorkOptions): Promise<RunReport> {
  const { store, runId } = options;
  requireLeases(store);
  const found = await joinableRun(store, runId, options.reopen === true);
  if (found.status === "completed") return storedReport(store, found, { invocation: true });
  // Planned (its eval checked against the run's identity) before the run is reopened: a
  // refused worker leaves the run as it was.
  const planning = await workPlanning(found, options);
  if (!planning.ok) {
    const { refusal } = planning;
    if (refusal.reason !== "nothing-to-resume") throw refusal.error;
    // Every key has its outcome: settle the run if its status lags, and report it.
    await reopened(store, found);
    await settle(store, runId, false);
    return finalReport(store, refusal.resume.plan, runId, options.created !== true);
  }
  const run = await reopened(store, found);
  const { plan, eval: ev, cap } = planning.resume;
  // A plan that lists no sample (a large dataset's): the leased keys are found in the snapshot,
  // and other workers' attempts told from the highest stored of each key before this one began.
  const paged = listedKeys(plan) === undefined;
  const stored = paged ? await storedAttempts(store, run) : undefined;
  const leaseMs = options.leaseMs ?? leaseTime();
  const concurrency = options.concurrency ?? run.config.concurrency;
  const worker: WorkerIdentity = { ...newOwnerIdentity(), concurrency, leaseMs };
  await requireLeases(store).register(runId, worker);
  const source = new LeaseSource({
    store,
    runId,
    token: worker.token,
    batch: concurrency,
    pollMs: Math.min(1_000, Math.max(50, Math.floor(leaseMs / 4))),
    ...(paged ? { locate: new LeasedSnapshot(store, runId, run.config.epochs).locate } : {}),
    onFirstClaim: (ms, keys) =>
      options.onJoined?.({
        runId,
        workerId: workerId(worker.token),
        concurrency,
        leaseMs,
        firstClaimMs: ms,
        firstClaimKeys: keys,
      }),
  });
  const exec: Execution = {
    run: { ...run, config: { ...planning.resume.run.config, concurrency } },
    owner: worker,
    plan,
    // A worker replays the open journal of keys it takes over (from a worker that died).
    resumed: options.created !== true,
    solver: ev.solver,
    scorers: ev.scorers,
    keys: source,
    ...(cap ? { cap } : {}),
    ...(ev.callModel ? { callModel: ev.callModel } : {}),
    ...(ev.cache ? { cache: ev.cache } : {}),
    ...(ev.rateLimits ? { rateLimits: ev.rateLimits } : {}),
  };
  let end: ExecutionEnd;
  try {
    end = await executeRun(exec, {
      ...options,
      heartbeatMs: options.heartbeatMs ?? heartbeatInterval({ staleMs: leaseMs }),
      secrets: runSecrets(store, options.secrets),
    });
  } catch (error) {
    await source.close();
    await requireLeases(store)
      .leave(runId, worker.token, "lost")
      .catch(() => {});
    if (error instanceof StetError && error.code === "E_FENCED") throw leasesLost(run, worker);
    throw error;
  }
  const stopped = end.stopped;
  await source.close();
  await requireLeases(store).leave(runId, worker.token, stopped ? "stopped" : "finished");
  if (stopped?.reason === "store-unwritable") {
    throw await withStoredSpend(stopped.error!, () =>
      finalReport(store, plan, runId, exec.resumed),
    );
  }
  // A stop at the cap says what the run spent in the end: read when the run is closed, after
  // which no worker writes (the other workers' in-flight keys are in by then).
  const note: RunNote | undefined =
    stopped?.reason === "budget" && cap
      ? (spent) => budgetNote(spent.costUsd, cap.maxCostUsd)
      : stopped?.note;
  await settle(store, runId, stopped !== null, note);
  const report = await executionReport(store, await requireRun(store, runId), exec, end, {
    stopped,
    ...(stored
      ? { isOthersAt: otherWorkersAt(stored, run.config.epochs, end.isNowAt) }
      : { isOthers: otherWorkers(planning.resume.attempts, end.isNow) }),
  });
  options.onEvent?.({ type: "run-finished", report });
  return report;
}

/**
 * The run as a worker may join it: a distributed run that is running, complete (reported as it
 * is), or, for a resume (`reopen`), interrupted or errored (`reopened` opens it). Refuses any
 * other, changing nothing.
 */
async function joinableRun(store: Store, runId: string, reopen: boolean): Promise<Run> {
  const run = await requireRun(store, runId);
  if (!run.config.distributed) {
    throw new StetError(
      "E_USAGE",
      `run ${runId} is not a distributed run: one process executes it (\`stet resume ${runId}\`)`,
      { details: { runId } },
    );
  }
  if (run.status === "running" || run.status === "completed" || reopen) return run;
  throw notRunning(run);
}

/** A joinable run that is not running, opened to workers again (its keys without an outcome). */
async function reopened(store: Store, run: Run): Promise<Run> {
  if (run.status === "running" || run.status === "completed") return run;
  await requireLeases(store).reopen(run.id);
  const now = await requireRun(store, run.id);
  if (now.status === "running" || now.status === "completed") return now;
  throw notRunning(now);
}

function notRunning(run: Run): StetError {
  const how = `${run.status}: \`stet resume ${run.id}\` opens it to workers again`;
  return new StetError("E_RUN_NOT_RUNNING", `run ${run.id} is ${how}`, {
    details: { runId: run.id, status: run.status },
  });
}

/**
 * Sets the run's final status once a worker left, if it can be set: completed or errored when
 * every key has its outcome; interrupted when this worker was cut short and no live worker is
 * left (the store refuses while any live lease remains). Undefined when the run stays running.
 */
async function settle(
  store: Store,
  runId: string,
  cutShort: boolean,
  note?: RunNote,
): Promise<RunStatus | undefined> {
  const counts = await store.reads.countKeys(runId);
  const status = settledStatus({ remaining: counts.remaining, cutShort });
  if (status === "interrupted" && (await liveWorkers(store, runId)).length > 0) return undefined;
  return (await requireLeases(store).closeRun(runId, status, note)) ? status : undefined;
}

/**
 * How a worker plans: as a resume (`planResume`, paged for a large dataset), or, the worker that
 * created the run from a dataset's pages (`startDistributed`), from the run's figures as a paged
 * resume counts, with the eval the run was just made from.
 */
async function workPlanning(run: Run, options: WorkOptions): Promise<ResumePlanning> {
  const ev = options.eval;
  if (!options.fromPages || !ev) return planResume({ ...options, asWorker: true });
  const left = await countedResume(options.store, run);
  // A run just created has the figures of its reducer: a paged run is always counted.
  if (!left) throw new Error(`run ${run.id}'s figures do not count its keys`);
  const cap = resumeCap(run, options.maxCost);
  const rateLimits = withFlagLimit(ev.rateLimits, options.rateLimit, run.config.model);
  const resume: PlannedResume = {
    run,
    plan: countedPlan(left.plan),
    attempts: [],
    eval: rateLimits ? { ...ev, rateLimits } : ev,
    ...(cap ? { cap } : {}),
    keys: { inflight: left.inflight },
  };
  return { ok: true, resume };
}

/**
 * The highest attempt number stored of each key of the run (its sample's place × epochs + epoch
 * − 1; 0: none), read a page at a time beside the snapshot's: what a worker whose plan lists no
 * sample tells other workers' attempts by (`otherWorkersAt`).
 */
async function storedAttempts(store: Store, run: Run): Promise<Int32Array> {
  const { epochs } = run.config;
  const highest = new Int32Array(run.sampleCount * epochs);
  const window = new SnapshotWindow(store, run.id);
  for await (const page of store.reads.attemptHeadPages(run.id)) {
    await window.hold(page);
    for (const head of page) {
      const index = window.indexOf(head.sampleId);
      if (index === undefined) continue;
      const slot = index * epochs + head.epoch - 1;
      if (head.attempt > highest[slot]!) highest[slot] = head.attempt;
    }
    window.release(page);
  }
  return highest;
}

/** `otherWorkers` by the sample's place: an attempt above the highest stored before, not now. */
function otherWorkersAt(stored: Int32Array, epochs: number, isNowAt: ExecutionEnd["isNowAt"]) {
  return (index: number | undefined, a: AttemptHead) =>
    index !== undefined && !isNowAt(index, a) && a.attempt > stored[index * epochs + a.epoch - 1]!;
}

/**
 * An outcome committed by another worker while this one worked: neither this invocation's nor
 * among the attempts its plan read.
 */
function otherWorkers(before: readonly AttemptHead[], isNow: ExecutionEnd["isNow"]) {
  const known = new Set(before.map((a) => `${keyString(a)}#${a.attempt}`));
  return (a: AttemptHead) => !isNow(a) && !known.has(`${keyString(a)}#${a.attempt}`);
}

async function finalReport(
  store: Store,
  plan: Parameters<typeof summarizePlan>[0],
  runId: string,
  resumed: boolean,
): Promise<RunReport> {
  return buildReport({
    store,
    run: await requireRun(store, runId),
    // A plan that lists no sample holds none: the report reads the snapshot's pages.
    ...(listedKeys(plan) ? { samples: plan.samples } : {}),
    plan: summarizePlan(plan),
    resumed,
    wallMs: 0,
  });
}

function leasesLost(run: Run, worker: WorkerIdentity): StetError {
  return new StetError(
    "E_FENCED",
    `worker ${workerId(worker.token)} (pid ${worker.pid}) lost its leases on run ${run.id}: it ` +
      `had not heartbeated for longer than its lease time (${worker.leaseMs / 1000}s, STET_LEASE_MS), ` +
      `stopped, suspended or stalled, so other workers took its keys over. Its late results were ` +
      `refused and nothing it computed after that is stored.`,
    { details: { runId: run.id, worker: workerId(worker.token) } },
  );
}
