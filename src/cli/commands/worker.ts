import { rateLimitFlag } from "../flag-values.js";
import { isStetError } from "../../core/errors.js";
import { loadEvalRegistry } from "../../runs/eval-registry.js";
import { openDistributedRuns } from "../../runs/open-distributed-runs.js";
import { staleLimit } from "../../runs/stale-limit.js";
import { PAGED_DATASET_BYTES } from "../../runs/start-run.js";
import {
  leaseTime,
  workerStaleLimit,
  workRun,
  type JoinedWorker,
  type WorkOptions,
} from "../../runs/work-run.js";
import type { Store } from "../../store/types.js";
import { EXIT } from "../exit-codes.js";
import { createIo, type Io } from "../io.js";
import { openStore } from "../open-store.js";
import { runWithUi, uiOptions } from "../run-ui.js";
import { trapSignals } from "../signals.js";

export interface WorkerFlags {
  store?: string;
  run?: string;
  concurrency?: number;
  maxCost?: number;
  /** `--rpm` / `--tpm`: the main model's rate limit. */
  rpm?: number;
  tpm?: number;
  /** Directory of eval files, for runs whose recorded eval path this machine does not have. */
  evals?: string;
  /** Keep polling for work instead of exiting when there is none. */
  wait?: boolean;
  json?: boolean;
  /** How long loading an eval module may take, ms. */
  loadTimeout?: number;
}

/** How often `stet worker --wait` looks for an open distributed run. */
const WAIT_POLL_MS = 2_000;

/**
 * `stet worker`: joins a distributed run (`--run`, or any open one whose eval it can load) and
 * executes keys leased to it, until none is left (exit 0). With `--wait` it then looks for the
 * next run, until a signal. Exits 5 when its leases were taken over (it froze past the lease
 * time), 130 on a signal, 6 at the spend cap.
 */
export async function workerCommand(flags: WorkerFlags): Promise<number> {
  const io = createIo(flags.json ?? false);
  const stale = staleLimit();
  const leaseMs = leaseTime();
  const t0 = performance.now();
  const store = await openStore(flags.store, workerStaleLimit(stale, leaseMs));
  const storeMs = performance.now() - t0;
  try {
    const loading = flags.loadTimeout === undefined ? {} : { timeoutMs: flags.loadTimeout };
    const registry = flags.evals ? await loadEvalRegistry(flags.evals, loading) : undefined;
    const work = (runId: string) => {
      const joinedAt = performance.now();
      const onJoined = (joined: JoinedWorker) =>
        io.stderr.write(`${startupLine(joined, storeMs, performance.now() - joinedAt)}\n`);
      return workOn(io, store, flags, {
        store,
        runId,
        leaseMs,
        onJoined,
        ...stale,
        ...(registry ? { registry } : {}),
        ...(flags.concurrency === undefined ? {} : { concurrency: flags.concurrency }),
        ...(flags.maxCost === undefined ? {} : { maxCost: flags.maxCost }),
        ...rateLimitFlag(flags),
        ...(flags.loadTimeout === undefined ? {} : { loadTimeoutMs: flags.loadTimeout }),
        paged: { minBytes: PAGED_DATASET_BYTES },
      });
    };
    if (flags.run !== undefined) return await work(flags.run);
    return await workAny(io, store, flags, work);
  } finally {
    await store.close();
  }
}

/** One run worked on with the terminal attached: progress, signals, its summary, an exit code. */
function workOn(io: Io, store: Store, flags: WorkerFlags, options: WorkOptions): Promise<number> {
  return runWithUi(io, uiOptions(flags), (controls) => workRun({ ...options, store, ...controls }));
}

/**
 * Without `--run`: works on each open distributed run whose eval loads here, oldest first, until
 * none is open (or, with `--wait`, until a signal). A run whose eval this machine cannot load is
 * skipped with a warning, once.
 */
async function workAny(
  io: Io,
  store: Store,
  flags: WorkerFlags,
  work: (runId: string) => Promise<number>,
): Promise<number> {
  const skipped = new Set<string>();
  for (;;) {
    const runs = (await openDistributedRuns(store)).filter((id) => !skipped.has(id));
    for (const runId of runs) {
      let code: number;
      try {
        code = await work(runId);
      } catch (error) {
        if (!isStetError(error, "E_EVAL_NOT_FOUND") && !isStetError(error, "E_EVAL_LOAD")) {
          throw error;
        }
        io.stderr.write(`stet: skipping run ${runId}: ${error.message}\n`);
        skipped.add(runId);
        continue;
      }
      if (code !== EXIT.ok && code !== EXIT.errored) return code;
    }
    if (!flags.wait) {
      if (runs.length === 0) io.say("no open distributed run to work on");
      return EXIT.ok;
    }
    const waited = trapSignals();
    const stopped = await sleep(WAIT_POLL_MS, waited.stop);
    waited.release();
    if (stopped) return EXIT.interrupted;
  }
}

/** Resolves true if `signal` aborted before `ms` passed. */
function sleep(ms: number, signal: AbortSignal): Promise<boolean> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve(true);
    const timer = setTimeout(() => resolve(false), ms);
    signal.addEventListener("abort", () => {
      clearTimeout(timer);
      resolve(true);
    });
  });
}

/**
 * "worker 3f2a9c1d joined run r_abc (concurrency 8, lease 30s): start-up 212 ms (store 14 ms,
 * eval and plan 160 ms, first claim 3 ms, 8 keys)"
 */
function startupLine(joined: JoinedWorker, storeMs: number, sinceOpen: number): string {
  const ms = (n: number) => `${Math.round(n)} ms`;
  const plan = Math.max(0, sinceOpen - joined.firstClaimMs);
  return (
    `worker ${joined.workerId} joined run ${joined.runId} (concurrency ${joined.concurrency}, ` +
    `lease ${joined.leaseMs / 1000}s): start-up ${ms(performance.now())} ` +
    `(store ${ms(storeMs)}, eval and plan ${ms(plan)}, first claim ${ms(joined.firstClaimMs)}, ` +
    `${joined.firstClaimKeys} keys)`
  );
}
