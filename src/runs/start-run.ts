import { withFlagLimit, type RateLimit } from "../core/rate-limits.js";
import { createSecretRedactor, redactConfig } from "../core/secrets.js";
import { randomBytes } from "node:crypto";
import { resolve } from "node:path";
import type { EngineEval, SolverFn } from "../core/eval.js";
import type { RunReport } from "../core/events.js";
import type { Json } from "../core/json.js";
import { planRun, snapshotPlan } from "../core/plan.js";
import type { AttemptDraft, DatasetEvalConfig, RunConfig } from "../core/types.js";
import { datasetEval } from "../eval/dataset-eval.js";
import type { ExecuteOptions, Execution } from "../engine/execute-run.js";
import { SnapshotKeys } from "../engine/snapshot-keys.js";
import { withDuplicateRows } from "./paged-eval.js";
import { newOwnerIdentity } from "../engine/owner.js";
import type { LoadedEvalFile } from "../eval/load-eval-file.js";
import { EVAL_DEFAULTS, resolveEval } from "../eval/resolve-eval.js";
import { StetError } from "../core/errors.js";
import { checkLabels, type RunLabels } from "../core/labels.js";
import { evalIdentity } from "./eval-identity.js";
import { requireLeases, type Store } from "../store/types.js";
import { loadEvalSource } from "./load-eval-source.js";
import { workRun, type WorkOptions } from "./work-run.js";
import { runExecution } from "./run-execution.js";
import { runSecrets } from "./run-secrets.js";
import { markSeeded, seedReused, startReuse } from "./reuse-run.js";
import { seededPages, seedReusedPages } from "./paged-reuse.js";
import { rescoreUnits } from "./rescore-units.js";

export { datasetEvalSpec } from "../eval/dataset-eval.js";

/** A new run's eval and what it records, everything but how it executes. */
export interface RunDefinition {
  eval: EngineEval;
  /** Recorded so `stet resume` can load the eval again. */
  evalPath?: string;
  /** A dataset run's eval (no module), recorded so `stet resume` can build it again. */
  datasetEval?: DatasetEvalConfig;
  /** The benchmark this run is started in, with the other runs of one invocation. */
  benchmark?: string;
  /** Recorded so `stet resume` goes on appending to the same Results JSONL. */
  output?: string;
  /** The `--model` override, passed to solvers as `ctx.model`. */
  model?: string;
  limit?: number;
  runId?: string;
  /** The run's labels (`--label`, git, CI), recorded with every known secret replaced. */
  labels?: RunLabels;
  /**
   * The epochs the eval itself declares, recorded in the run's identity (a resume compares them
   * with the eval's then); default the run's. `--epochs` overrides the run's, not the eval's.
   */
  declaredEpochs?: number;
  /**
   * Reuse an earlier run's outcomes (`--reuse`): a run id, or `latest` (see `planReuseFrom`).
   * Reused keys are recorded as the seed is, with provenance `imported` from `run:<id>#<attempt>`.
   */
  reuse?: string;
  /**
   * Attempts recorded, all or nothing, right after the run is created and before it is planned,
   * so their keys are not executed: the completed results of a partial ResultSet (`stet run
   * --resume-from`). Give them `provenance: { kind: "imported", source }`.
   */
  seed?: AttemptDraft[];
}

export interface RunEvalOptions extends ExecuteOptions, RunDefinition {
  /**
   * `--detach` (with the eval's batches): once every key waits on a provider batch, the run is
   * left interrupted with a note saying so, and a later resume collects the batches.
   */
  detach?: boolean;
}

/**
 * Starts a new run: records its configuration and sample snapshot, then executes every key.
 *
 * @example
 * const report = await runEval({ store, eval: resolved, onEvent: (e) => render(e) });
 * report.metrics; // [{ scorer: "exact", mean: 0.82, stderr: 0.03, samples: 100 }]
 */
export async function runEval(options: RunEvalOptions): Promise<RunReport> {
  const { eval: ev } = options;
  const { run, owner, seeded } = await createRecordedRun(options);
  if (ev.pages) {
    // Created from the dataset's pages: executed from the snapshot's, holding neither. A seeded
    // run (reused keys, or the results of `--resume-from`) executes what its figures leave.
    if (run.config.reuse?.reused || seeded.length > 0) {
      const parts = await seededPages(options.store, run, owner, ev.journalKeep);
      return runExecution(execution(options, parts), options);
    }
    const plan = snapshotPlan(run.sampleCount, ev.epochs);
    const keys = new SnapshotKeys(options.store, run.id, ev.epochs);
    return runExecution(execution(options, { run, owner, plan, fresh: true, keys }), options);
  }
  const plan = planRun({ snapshot: ev.samples, epochs: ev.epochs, attempts: seeded, inflight: [] });
  // Reused outputs the source's scorers did not score as the eval's do now: scored first.
  const rescore =
    plan.toRescore.length === 0
      ? {}
      : {
          rescore: {
            units: await rescoreUnits(options.store, run.id, plan.toRescore, plan.samples),
            pass: `reuse-${owner.token.slice(0, 12)}`,
            journalKeep: ev.journalKeep,
          },
        };
  const fresh = seeded.length === 0 ? { fresh: true } : {};
  return runExecution(execution(options, { run, owner, plan, ...fresh, ...rescore }), options);
}

/** A new run's execution of `ev`: what it executes (`parts`) and how, from the eval. */
function execution(
  options: RunEvalOptions,
  parts: Pick<Execution, "run" | "owner" | "plan" | "fresh" | "keys" | "rescore">,
): Execution {
  const { eval: ev } = options;
  return {
    ...parts,
    resumed: false,
    solver: ev.solver,
    scorers: ev.scorers,
    // Seeded attempts are imported, paid for elsewhere: the cap counts none of them.
    ...(ev.maxCost === undefined ? {} : { cap: { maxCostUsd: ev.maxCost } }),
    ...(ev.journalKeep ? { journalKeep: ev.journalKeep } : {}),
    ...(ev.cache ? { cache: ev.cache } : {}),
    ...(ev.rateLimits ? { rateLimits: ev.rateLimits } : {}),
    ...(ev.batch ? { batch: ev.batch } : {}),
    ...(ev.batch && options.detach ? { detach: true } : {}),
    ...(ev.callModel ? { callModel: ev.callModel } : {}),
  };
}

export interface DistributedRunOptions extends RunEvalOptions {
  /** How long the creating worker's leases live without a heartbeat (default `leaseTime()`). */
  leaseMs?: number;
  onJoined?: WorkOptions["onJoined"];
}

/**
 * Refuses an eval a distributed run cannot execute as asked, before anything is recorded: one
 * that batches (its workers would send each call alone, at full price; a batched run is executed
 * by one process).
 */
export function checkDistributable(ev: Pick<EngineEval, "name" | "batch">): void {
  if (!ev.batch) return;
  throw new StetError(
    "E_USAGE",
    `eval "${ev.name}" sends its calls through provider batches, which one process executes: distributed workers do not batch (docs/batch.md). Run it without --distributed, or without --batch`,
  );
}

/**
 * Starts a distributed run (`stet run --distributed`): records it like `runEval`, with one lease
 * per key and no owner, then works on it as its first worker (`workRun`) until every key has its
 * outcome, whoever executed it. Other processes join it with `stet worker`.
 *
 * @example const report = await startDistributed({ store, eval: resolved, onEvent });
 */
export async function startDistributed(options: DistributedRunOptions): Promise<RunReport> {
  const { store } = options;
  checkDistributable(options.eval);
  // Refused before the run is recorded: a store without leases could not hand out its keys.
  const leases = requireLeases(store);
  const { run, owner } = await createRecordedRun(options, true);
  // The creator lets go at once: a distributed run has no owner; its workers hold leases. A
  // seeded key's lease is done: no worker executes a key the seed completed.
  await store.runs.release(run.id, owner.token, "interrupted", "opening to workers");
  await leases.reopen(run.id);
  // Of a dataset's pages (a seed too), the run is created from them and its workers execute from
  // the snapshot's (`workRun`).
  const fromPages = options.eval.pages !== undefined;
  return workRun({ ...options, runId: run.id, created: true, ...(fromPages ? { fromPages } : {}) });
}

/**
 * Records a new run (configuration, identity, sample snapshot; with `distributed`, a lease per
 * key) owned by a new identity, and its seed.
 */
async function createRecordedRun(options: RunEvalOptions, distributed = false) {
  const { store, eval: ev } = options;
  const owner = newOwnerIdentity();
  const identity = evalIdentity(
    { ...ev, epochs: options.declaredEpochs ?? ev.epochs },
    options.evalPath,
    runSecrets(store, options.secrets),
  );
  const reuse = await startReuse(options, identity, distributed);
  const run = await store.runs
    .create({
      id: options.runId ?? newRunId(),
      config: {
        ...recordedConfig(options),
        identity,
        ...(distributed ? { distributed } : {}),
        ...(reuse ? { reuse: reuse.summary } : {}),
      },
      // A paged dataset goes to the snapshot a page at a time, checked as it is read.
      samples: ev.pages ? ev.pages.read() : [...ev.samples],
      owner,
      ...(options.labels === undefined ? {} : { labels: recordedLabels(options, options.labels) }),
    })
    .catch(async (error: unknown) => {
      throw await withDuplicateRows(error, ev.pages);
    });
  if (reuse) {
    // Paged, the picks are found again in the store (`seededPages` executes the rest).
    const seed = async () => {
      const seeded = ev.pages
        ? await seedReusedPages(store, run, owner.token, reuse.plan).then(() => [])
        : await seedReused(store, run.id, owner.token, reuse.plan);
      return { seeded, run: await markSeeded(store, run, owner.token) };
    };
    return { owner, ...(await seedRun(store, run.id, owner.token, seed)) };
  }
  const seeded = await seedRun(store, run.id, owner.token, () =>
    options.seed?.length
      ? store.attempts.record(run.id, owner.token, options.seed)
      : Promise.resolve([]),
  );
  return { run, owner, seeded };
}

/** What `stet run` and `POST /api/runs` ask for. */
export interface StartRequest {
  /**
   * An eval module or EvalPort suite to load, one already loaded (a server's registered eval), or
   * a dataset to ask of a chat model with built-in scorers (`stet run --dataset`).
   */
  eval: string | LoadedEvalFile | { dataset: DatasetEvalConfig };
  model?: string;
  epochs?: number;
  concurrency?: number;
  limit?: number;
  timeoutMs?: number;
  /** The spend cap on the run's total, USD (`--max-cost`); overrides the eval's `maxCost`. */
  maxCost?: number;
  /** `--cache` / `--no-cache`: overrides the eval's `cache`. */
  cache?: boolean;
  /** `--rpm` / `--tpm`: the main model's rate limit (see withFlagLimit). */
  rateLimit?: RateLimit;
  /** `--batch`: the provider batches on, whatever the eval's `batch` says. */
  batch?: boolean;
  /** A (partial) ResultSet or Results JSONL whose completed results seed the run. */
  resumeFrom?: string;
  /** The Results JSONL the run streams to, recorded so a resume appends to it. */
  output?: string;
  /** The run's id (`--run-id`), checked by `checkRunId`; default a new random one. */
  runId?: string;
  /** How long loading the eval module may take (`--load-timeout`); default `loadEvalFile`'s. */
  loadTimeoutMs?: number;
  /** Reuse an earlier run's outcomes (`--reuse`): a run id or `latest`; default the eval's `reuse`. */
  reuse?: string;
  /**
   * Load the eval module and its local imports again even when this process loaded them before
   * (`stet run --watch`, which loads an edited eval in the same process).
   */
  fresh?: boolean;
  /** The run's labels (checked by `checkLabels`). */
  labels?: RunLabels;
  /**
   * A dataset file of at least `minBytes` is not loaded: the run is created from its pages and
   * executes from its snapshot's (`EngineEval.pages`), in sample id order; a seed
   * (`resumeFrom`) or a reuse is planned a page at a time too. `stet run` asks it for files of
   * `PAGED_DATASET_BYTES`.
   */
  paged?: { minBytes: number };
}

/**
 * The size of a dataset file from which `stet run` creates and executes a run a page at a time
 * (`StartRequest.paged`): some 100,000 samples of a few short fields. Smaller datasets load
 * whole and execute in dataset order.
 */
export const PAGED_DATASET_BYTES = 8 << 20;

/**
 * The first half of starting a run: loads and resolves the eval, reads and checks the seed, and
 * picks the run id, touching no store, so a broken eval, dataset or seed refuses before a run
 * exists (and a server can answer with a status code before it streams). `runEval({ ...prepared,
 * store, ... })` is the second half.
 *
 * @example const prepared = await prepareStart({ eval: "evals/qa.ts", limit: 10 });
 */
export async function prepareStart(
  request: StartRequest,
): Promise<RunDefinition & { runId: string; datasetFile?: string }> {
  if (request.runId !== undefined) checkRunId(request.runId);
  const source = request.eval;
  const dataset = typeof source === "object" && "dataset" in source ? source.dataset : undefined;
  const loaded =
    typeof source === "string"
      ? await loadEvalSource(source, {
          ...(request.loadTimeoutMs === undefined ? {} : { timeoutMs: request.loadTimeoutMs }),
          ...(request.fresh ? { fresh: true } : {}),
        })
      : dataset
        ? datasetEval(dataset)
        : (source as LoadedEvalFile);
  const ev = await resolveEval(loaded.eval, {
    baseDir: loaded.baseDir,
    limit: request.limit,
    epochs: request.epochs,
    concurrency: request.concurrency,
    timeoutMs: request.timeoutMs,
    maxCost: request.maxCost,
    cache: request.cache,
    ...(request.batch === undefined ? {} : { batch: request.batch }),
    stamp: true,
    ...(request.paged ? { paged: request.paged } : {}),
  });
  const rateLimits = withFlagLimit(ev.rateLimits, request.rateLimit, request.model);
  if (rateLimits) ev.rateLimits = rateLimits;
  const seed =
    request.resumeFrom === undefined
      ? undefined
      : // EvalPort parsing loads only for --resume-from.
        await (await import("../evalport/read-seed.js")).readSeed(request.resumeFrom, ev);
  return {
    runId: request.runId ?? newRunId(),
    eval: ev,
    // A dataset run has no eval file: it records what builds its eval again.
    ...(dataset ? { datasetEval: dataset } : { evalPath: loaded.path }),
    ...datasetFileOf(dataset?.dataset ?? loaded.eval.dataset, loaded.baseDir),
    declaredEpochs: loaded.eval.epochs ?? EVAL_DEFAULTS.epochs,
    ...(seed === undefined ? {} : { seed: seed.drafts }),
    ...(request.output === undefined ? {} : { output: resolve(request.output) }),
    ...(request.model === undefined ? {} : { model: request.model }),
    ...(request.limit === undefined ? {} : { limit: request.limit }),
    ...(request.labels === undefined ? {} : { labels: checkLabels(request.labels, "labels") }),
    ...reuseOf(request.reuse ?? loaded.eval.reuse, request.resumeFrom),
  };
}

/** The file the eval's dataset is read from, when it is one (what `stet run --watch` watches). */
function datasetFileOf(dataset: unknown, baseDir: string): { datasetFile?: string } {
  return typeof dataset === "string" ? { datasetFile: resolve(baseDir, dataset) } : {};
}

/** The reuse a start asks for; with `--resume-from` too, refused (`E_USAGE`): one seed or the other. */
function reuseOf(reuse: string | undefined, resumeFrom: string | undefined): { reuse?: string } {
  if (reuse === undefined) return {};
  if (resumeFrom !== undefined) {
    throw new StetError(
      "E_USAGE",
      "--reuse cannot be used with --resume-from: start the run with one of them",
    );
  }
  return { reuse };
}

function runConfig(options: RunDefinition): RunConfig {
  const ev = options.eval;
  return {
    evalName: ev.name,
    epochs: ev.epochs,
    concurrency: ev.concurrency,
    retries: ev.retries,
    reducer: ev.reducer,
    solver: describeSolver(ev.solver),
    scorers: ev.scorers.map((s) => s.name),
    ...(options.evalPath === undefined ? {} : { evalPath: options.evalPath }),
    ...(options.datasetEval === undefined ? {} : { datasetEval: options.datasetEval }),
    ...(options.benchmark === undefined ? {} : { benchmark: options.benchmark }),
    ...(options.output === undefined ? {} : { output: options.output }),
    ...(options.model === undefined ? {} : { model: options.model }),
    ...(ev.timeoutMs === undefined ? {} : { timeoutMs: ev.timeoutMs }),
    ...(options.limit === undefined ? {} : { limit: options.limit }),
    ...(ev.maxCost === undefined ? {} : { maxCostUsd: ev.maxCost }),
    ...(ev.limits === undefined ? {} : { limits: ev.limits }),
    ...(ev.datasetStamp === undefined ? {} : { datasetStamp: ev.datasetStamp }),
  };
}

/** Records the seed; if that fails, the new run is released (resumable) before rethrowing. */
async function seedRun<T>(store: Store, runId: string, token: string, seed: () => Promise<T>) {
  try {
    return await seed();
  } catch (error) {
    await store.runs.release(runId, token, "interrupted", "seeding the run failed").catch(() => {});
    throw error;
  }
}

/**
 * The configuration as stored: credential-like keys of the solver's description replaced, and
 * every known secret (see runSecrets) anywhere in it, so a custom `describe()` that returns a
 * key does not put it in the store.
 */
function recordedConfig(options: RunEvalOptions): RunConfig {
  const config = redactConfig(runConfig(options));
  return createSecretRedactor(knownSecrets(options)).json(config as unknown as Json)
    .value as unknown as RunConfig;
}

/** The labels as stored: redacted as the configuration is (a label may hold a key's value). */
function recordedLabels(options: RunEvalOptions, labels: RunLabels): RunLabels {
  return createSecretRedactor(knownSecrets(options)).json(redactConfig(labels)).value;
}

function knownSecrets(options: RunEvalOptions) {
  return [
    ...runSecrets(options.store, options.secrets),
    ...(options.eval.solver.secrets?.() ?? []),
  ];
}

function describeSolver(solver: SolverFn): Record<string, Json> {
  return solver.describe?.() ?? { kind: "function", name: solver.name || "anonymous" };
}

const RUN_ID = /^[A-Za-z0-9._-]{1,64}$/;

/**
 * Refuses (`E_USAGE`) a run id a user chose that is not 1 to 64 letters, digits, `-`, `_` or `.`
 * (so it is safe in a URL, a shell and a file name).
 *
 * @example checkRunId("nightly-7"); // ok
 */
export function checkRunId(runId: string): void {
  if (!RUN_ID.test(runId) || runId === "." || runId === "..") {
    throw new StetError(
      "E_USAGE",
      `invalid run id ${JSON.stringify(runId)}: use 1 to 64 letters, digits, "-", "_" or "."`,
      { details: { runId } },
    );
  }
}

/**
 * A short, URL- and shell-safe run id.
 *
 * @example newRunId() // "r_k3xq9amz0b"
 */
export function newRunId(): string {
  return `r_${randomBytes(8).toString("base64url").replace(/[-_]/g, "x").slice(0, 10).toLowerCase()}`;
}
