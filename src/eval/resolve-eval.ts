import { callModel } from "../solvers/model-call.js";
import { checkBound } from "../core/bounds.js";
import { stat } from "node:fs/promises";
import { resolve } from "node:path";
import {
  loadSampleIndex,
  sampleRecordPages,
  whereOfRow,
  type LoadSamplesOptions,
} from "../dataset/load-samples.js";
import { datasetStamp } from "./dataset-stamp.js";
import { StetError } from "../core/errors.js";
import { batchSettings, type BatchOptions } from "../core/batch.js";
import type { CachePolicy, EngineEval, PagedSamples, Scorer, SolverFn } from "../core/eval.js";
import type { SampleRecord } from "../core/types.js";
import { createSandbox, usesSandbox, USES_SANDBOX, type Sandbox } from "../sandbox/index.js";
import { toScorer } from "../scorers/normalize.js";
import type { Eval } from "./types.js";
import { sampleLimitsSchema, type SampleLimits } from "../core/limits.js";

export interface ResolveEvalOptions {
  /** Directory a relative dataset path resolves against (the eval file's). */
  baseDir: string;
  /** Keep only the first `limit` samples, in dataset order. */
  limit?: number;
  /** A run's overrides (`--epochs`, `--concurrency`, `--timeout`, a request body): they win. */
  epochs?: number;
  concurrency?: number;
  timeoutMs?: number;
  /** `--max-cost` or a request body's `maxCost`: the run's spend cap, USD. */
  maxCost?: number;
  /** A request body's per-sample `limits`: they replace the eval's. */
  limits?: SampleLimits;
  /** `--cache` / `--no-cache` (or a request body's `cache`): overrides the eval's `cache`. */
  cache?: boolean;
  /** `--batch` (or a request body's `batch`): the provider batches on, whatever the eval says. */
  batch?: boolean;
  /** Accept a dataset with no samples (a resume executes the run's own copy of them). */
  allowEmpty?: boolean;
  /**
   * Leave the dataset unread (`samples` empty): for a rescore, which scores the run's own copy
   * of its samples, read from the store a page at a time, and executes none.
   */
  withoutSamples?: boolean;
  /**
   * Stamp the dataset file (`datasetStamp`). `true` (a new run): its stamp is computed before and
   * after the samples are read and given as the eval's `datasetStamp` when the two are equal (a
   * file changed while it was read has none). A recorded stamp (a resume's): a file whose stamp
   * equals it is not read at all (`unchanged`, `samples` empty): the run's snapshot, read from
   * the same bytes, is every sample as the file has it.
   */
  stamp?: true | string;
  /**
   * A new run's dataset file of at least `minBytes` is left unread, as `pages` (see
   * `EngineEval.pages`), when nothing needs it whole before the run exists: an eval without a
   * reply cache or provider batches (whose reports and plans fold the samples). With a recorded
   * `stamp` (a resume's), the file counts `unchanged` only when it is paged: a smaller one loads.
   */
  paged?: { minBytes: number };
}

export const EVAL_DEFAULTS = { epochs: 1, reducer: "mean", concurrency: 8, retries: 0 } as const;

/**
 * Turns an eval definition into what the engine executes: the dataset loaded as samples with
 * ids and fingerprints, scorers normalised (a plain function is named after itself), and
 * defaults filled in (epochs 1, reducer "mean", concurrency 8, retries 0).
 *
 * @example
 * const { eval: ev, baseDir } = await loadEvalFile("evals/arithmetic.ts");
 * const resolved = await resolveEval(ev, { baseDir, limit: 10 });
 * await runEval({ store, eval: resolved });
 */
export async function resolveEval(ev: Eval, options: ResolveEvalOptions): Promise<EngineEval> {
  return (await resolveEvalIndexed(ev, options)).eval;
}

/**
 * `resolveEval`, with the map of its samples by id that loading them built (see
 * `loadSampleIndex`): what a resume compares the run's snapshot with.
 *
 * @example const { eval: resolved, samplesById } = await resolveEvalIndexed(ev, { baseDir });
 */
export async function resolveEvalIndexed(
  ev: Eval,
  options: ResolveEvalOptions,
): Promise<{
  eval: EngineEval;
  samplesById: ReadonlyMap<string, SampleRecord>;
  /** The file's stamp is the recorded one (`options.stamp`): its samples were not read. */
  unchanged?: true;
}> {
  // The shells checked their input already; a library caller's overrides meet the same bounds.
  for (const name of ["limit", "epochs", "concurrency", "timeoutMs", "maxCost"] as const) {
    const value: number | undefined = options[name];
    if (value !== undefined) checkBound(name, value, name, "E_CONFIG");
  }
  const stamp =
    options.stamp && !options.withoutSamples ? await datasetStamp(ev, options.baseDir) : undefined;
  const pages = await pagedSamples(ev, options, stamp);
  // Asked for pages, a file is left unread as unchanged only when it is paged (large enough).
  const unchanged =
    stamp !== undefined && stamp === options.stamp && (!options.paged || pages !== undefined);
  const { records: samples, byId } =
    options.withoutSamples || unchanged || pages
      ? { records: [], byId: new Map<string, SampleRecord>() }
      : await loadSampleIndex(ev.dataset, loadOptions(ev, options));
  checkInputs(ev.solver, samples);
  const bound = await withSandbox(ev, ev.scorers.map(toScorer));
  const resolved: EngineEval = {
    name: ev.name,
    samples,
    ...(pages ? { pages } : {}),
    solver: ev.journal === false ? unjournaled(bound.solver) : bound.solver,
    scorers: bound.scorers,
    callModel,
    epochs: options.epochs ?? ev.epochs ?? EVAL_DEFAULTS.epochs,
    reducer: ev.reducer ?? EVAL_DEFAULTS.reducer,
    concurrency: options.concurrency ?? ev.concurrency ?? EVAL_DEFAULTS.concurrency,
    retries: ev.retries ?? EVAL_DEFAULTS.retries,
    ...timeout(options.timeoutMs ?? ev.timeoutMs),
    ...maxCost(options.maxCost ?? ev.maxCost),
    ...limitsOf(options.limits ?? ev.limits),
    ...(typeof ev.journal === "object" && ev.journal.keep ? { journalKeep: ev.journal.keep } : {}),
    ...cachePolicy(ev.cache, options.cache),
    ...(ev.rateLimits ? { rateLimits: ev.rateLimits } : {}),
    ...batchPolicy(ev, bound.solver, options.batch),
  };
  if (unchanged) return { eval: resolved, samplesById: byId, unchanged };
  // Pages check the file's stamp once they are read (a changed file refuses the run).
  if (pages && stamp !== undefined) resolved.datasetStamp = stamp;
  // The stamp vouches for the samples only if the file did not change while they were read.
  else if (stamp !== undefined && stamp === (await datasetStamp(ev, options.baseDir))) {
    resolved.datasetStamp = stamp;
  }
  return { eval: resolved, samplesById: byId };
}

/** How the eval's dataset is loaded (`loadSampleIndex`), whole or a page at a time. */
function loadOptions(ev: Eval, options: ResolveEvalOptions): LoadSamplesOptions {
  return {
    baseDir: options.baseDir,
    evalName: ev.name,
    ...(options.allowEmpty ? { allowEmpty: true } : {}),
    ...(ev.sample === undefined ? {} : { mapper: ev.sample }),
    ...(options.limit === undefined ? {} : { limit: options.limit }),
  };
}

/**
 * The eval's dataset as pages (`options.paged`), when it is a file of at least `minBytes` and
 * the eval neither caches replies nor batches its calls; undefined otherwise (it loads whole).
 * Either way of reading it checks every input with the solver (`checkInputs`) and ends by
 * checking that the file still has the stamp it had before it was read.
 */
async function pagedSamples(
  ev: Eval,
  options: ResolveEvalOptions,
  stamp: string | undefined,
): Promise<PagedSamples | undefined> {
  const { paged, baseDir } = options;
  if (!paged || options.withoutSamples || typeof ev.dataset !== "string") return undefined;
  if (options.cache ?? (ev.cache !== undefined && ev.cache !== false)) return undefined;
  if (options.batch === true || (ev.batch !== undefined && ev.batch !== false)) return undefined;
  const file = resolve(baseDir, ev.dataset);
  const size = await stat(file).then(
    (s) => (s.isFile() ? s.size : -1),
    () => -1,
  );
  if (size < paged.minBytes) return undefined;
  const loading = loadOptions(ev, options);
  const unchangedFile = async () => {
    if (stamp !== undefined && stamp !== (await datasetStamp(ev, baseDir))) {
      throw new StetError("E_DATASET", `${file} changed while it was read: start the run again`);
    }
  };
  return {
    file,
    async *read() {
      for await (const page of sampleRecordPages(file, loading)) {
        checkInputs(ev.solver, page);
        yield page;
      }
      await unchangedFile();
    },
    async whole() {
      const { records } = await loadSampleIndex(file, loading);
      checkInputs(ev.solver, records);
      await unchangedFile();
      return records;
    },
    whereOf: (n) => whereOfRow(file, loading, n),
  };
}

/**
 * The eval's `batch` as settings, `--batch` turning it on; absent when off. A solver that cannot
 * hand its calls over (an agent, a command) is refused before anything runs.
 */
function batchPolicy(
  ev: Eval,
  solver: SolverFn,
  flag: boolean | undefined,
): { batch?: Required<BatchOptions> } {
  const given = ev.batch;
  if (!(flag === true || (given !== undefined && given !== false))) return {};
  if (!solver.batchable) {
    const kind = solver.describe?.().kind;
    throw new StetError(
      "E_CONFIG",
      `--batch needs a solver that makes single model calls (solvers.chat, an EvalPort suite); eval "${ev.name}"'s solver${typeof kind === "string" ? ` (${kind})` : ""} cannot send its calls through a provider batch: run it without --batch (and without the eval's batch)`,
    );
  }
  return { batch: batchSettings(given === undefined || given === false ? true : given) };
}

/** The eval's `cache` as a policy, `--cache`/`--no-cache` winning; absent when off. */
function cachePolicy(given: Eval["cache"], override: boolean | undefined): { cache?: CachePolicy } {
  if (!(override ?? (given !== undefined && given !== false))) return {};
  const options = typeof given === "object" ? given : {};
  const ttl = options.ttlDays === undefined ? {} : { ttlDays: options.ttlDays };
  return { cache: { perEpoch: options.perEpoch ?? true, ...ttl } };
}

/** The solver marked `journal: false` for the engine, as a wrapper: the eval's own is untouched. */
function unjournaled(solver: SolverFn): SolverFn {
  const wrapped: SolverFn = (sample, ctx) => solver(sample, ctx);
  if (solver.describe) wrapped.describe = () => solver.describe!();
  if (solver.secrets) wrapped.secrets = () => solver.secrets!();
  if (solver.checkInput) wrapped.checkInput = (input) => solver.checkInput!(input);
  if (solver.batchable) wrapped.batchable = true;
  wrapped.journal = false;
  return wrapped;
}

/**
 * Every sample's input as the solver takes it (SolverFn.checkInput): the first bad one refuses
 * the eval (E_DATASET naming the sample and the field) before anything runs.
 */
function checkInputs(solver: SolverFn, samples: readonly SampleRecord[]): void {
  if (!solver.checkInput) return;
  for (const { sample } of samples) {
    const problem = solver.checkInput(sample.input);
    if (problem !== undefined) {
      throw new StetError("E_DATASET", `sample "${sample.id}": ${problem}`, {
        details: { sampleId: sample.id },
      });
    }
  }
}

/**
 * Scorers (and a `sandboxed` solver) that run programs get the eval's sandbox, checked here,
 * before any solver call: an unavailable backend refuses the run (E_CONFIG with what to install).
 * An eval that sets a sandbox has it checked even when nothing built in needs it.
 */
async function withSandbox(
  ev: Eval,
  scorers: Scorer[],
): Promise<{ solver: SolverFn; scorers: Scorer[] }> {
  let pending: Promise<Sandbox> | undefined;
  const evalSandbox = (): Promise<Sandbox> =>
    (pending ??= (async () => {
      const sandbox = createSandbox(ev.sandbox);
      await sandbox.check();
      return sandbox;
    })());
  if (ev.sandbox !== undefined) await evalSandbox();
  return {
    solver: usesSandbox<SolverFn>(ev.solver)
      ? await ev.solver[USES_SANDBOX](evalSandbox)
      : ev.solver,
    scorers: await Promise.all(
      scorers.map((s) => (usesSandbox<Scorer>(s) ? s[USES_SANDBOX](evalSandbox) : s)),
    ),
  };
}

function maxCost(usd: number | undefined): { maxCost?: number } {
  return usd === undefined ? {} : { maxCost: usd };
}

function timeout(ms: number | undefined): { timeoutMs?: number } {
  return ms === undefined ? {} : { timeoutMs: ms };
}

/** Limits as the engine takes them: none when empty; a library caller's checked like the eval's. */
function limitsOf(limits: SampleLimits | undefined): { limits?: SampleLimits } {
  if (limits === undefined) return {};
  const parsed = sampleLimitsSchema.safeParse(limits);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const where = ["limits", ...issue.path.map(String)].join(".");
    throw new StetError("E_CONFIG", `${where}: ${issue.message}`);
  }
  return Object.keys(parsed.data).length === 0 ? {} : { limits: parsed.data };
}
