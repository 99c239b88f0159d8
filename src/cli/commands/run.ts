import { rateLimitFlag } from "../flag-values.js";
import { isStetError, StetError } from "../../core/errors.js";
import { parseLabels, sortedLabels, type RunLabels } from "../../core/labels.js";
import type { DatasetEvalConfig } from "../../core/types.js";
import { autoLabels } from "../auto-labels.js";
import { newBenchmarkId, splitConcurrency } from "../../runs/benchmark.js";
import {
  checkDistributable,
  checkRunId,
  datasetEvalSpec,
  PAGED_DATASET_BYTES,
  prepareStart,
  runEval,
  startDistributed,
  type StartRequest,
} from "../../runs/start-run.js";
import { leaseTime, workerStaleLimit } from "../../runs/work-run.js";
import type { Store } from "../../store/types.js";
import { staleLimit } from "../../runs/stale-limit.js";
import { createIo } from "../io.js";
import { EXIT } from "../exit-codes.js";
import { parseBaselineSelector } from "../../runs/baseline.js";
import { diffCommand } from "./diff.js";
import { openStore, openStoreWithRun, storeLocation } from "../open-store.js";
import { prepareRunOutput, withRunOutput } from "../run-output.js";
import { resumeHint } from "../resume-hint.js";
import { runManyWithUi } from "../run-many.js";
import { runWithUi, uiOptions } from "../run-ui.js";
import { watchRuns } from "../watch.js";
import { resumeCommand } from "./resume.js";
import { resumeExisting } from "./run-existing.js";

export interface RunFlags {
  /** One model, or several (`--model a --model b`): then one run per model, as a benchmark. */
  model?: string | string[];
  /** A dataset to evaluate with no eval module (then `target` is unused). */
  dataset?: string;
  /** With `--dataset`: built-in scorers by name. */
  scorer?: string[];
  /** With `--dataset`: the system message. */
  system?: string;
  epochs?: number;
  concurrency?: number;
  limit?: number;
  timeout?: number;
  store?: string;
  json?: boolean;
  resume?: string;
  failUnder?: number;
  rerunChanged?: boolean;
  resumeFrom?: string;
  /** The spend cap on the run's total, USD. */
  maxCost?: number;
  /** `--cache` / `--no-cache`. */
  cache?: boolean;
  /** `--rpm` / `--tpm`: the main model's rate limit. */
  rpm?: number;
  tpm?: number;
  /** `--batch`. */
  batch?: boolean;
  /** `--detach` (with batches): submit them and exit; `stet resume` collects. */
  detach?: boolean;
  /** Results JSONL streamed as samples finish; the ResultSet beside it at the end. */
  output?: string;
  /** The run's id: the same command again resumes it, or does nothing once it is complete. */
  runId?: string;
  allowEvalChange?: boolean;
  /** Open the run to workers (`stet worker`) and work on it as one of them. */
  distributed?: boolean;
  /** How long loading the eval module may take, ms. */
  loadTimeout?: number;
  /** Reuse an earlier run's outcomes: a run id, or `latest`. */
  reuse?: string;
  /** Run again on every change of the eval, its local imports or its dataset (`watchRuns`). */
  watch?: boolean;
  /** `--label key=value`, repeatable; added to (and over) the labels stet records itself. */
  label?: string[];
  /** Compare the run, once it ends, with the baseline this picks (`stet diff --baseline`). */
  baseline?: string[];
  /** With `--baseline`: exit 4 on a significant regression. */
  failOnRegression?: boolean;
}

/**
 * `stet run <eval>`: start a run (or, with `--resume <id>`, continue one). With `--run-id` naming
 * a run that exists, the run of the same eval is resumed (or left alone when complete); a run of
 * another eval is refused.
 */
export async function runCommand(target: string | undefined, given: RunFlags): Promise<number> {
  if (given.baseline === undefined) {
    if (given.failOnRegression)
      throw new StetError("E_USAGE", "--fail-on-regression goes with --baseline <selector>");
    return runOnce(target, given, {});
  }
  if ([given.model].flat().length > 1 || given.json || given.distributed)
    throw new StetError(
      "E_USAGE",
      "--baseline compares one run: not with several --model, --json or --distributed (run, then `stet diff --baseline`)",
    );
  parseBaselineSelector(given.baseline); // a bad selector refuses before the run
  const started: { runId?: string } = {};
  const code = await runOnce(target, given, started);
  // Only a run that ended (complete, or with errored samples) has outcomes to compare.
  if (code !== EXIT.ok && code !== EXIT.errored && code !== EXIT.belowThreshold) return code;
  const runId = given.resume ?? started.runId;
  if (runId === undefined) return code;
  const compared = await diffCommand(runId, undefined, {
    ...(given.store === undefined ? {} : { store: given.store }),
    baseline: given.baseline,
    failOnRegression: given.failOnRegression ?? false,
  });
  return code !== EXIT.ok ? code : compared;
}

/** `stet run` without `--baseline`; `started.runId` is set to the run's id once it is known. */
async function runOnce(
  target: string | undefined,
  given: RunFlags,
  started: { runId?: string },
): Promise<number> {
  checkDetach(given);
  const models = given.model === undefined ? [] : [given.model].flat();
  if (models.length > 1) return runBenchmark(target, given, models);
  const flags = { ...given, model: models[0] };
  if (flags.distributed && flags.resume) {
    throw new StetError(
      "E_USAGE",
      "--distributed starts a new run; resume one with `stet resume <id>`",
    );
  }
  if (flags.distributed && flags.output !== undefined) {
    throw new StetError(
      "E_USAGE",
      "--output streams one process's results; a distributed run's are in the store: `stet export <id>` once it is complete",
    );
  }
  if (flags.distributed && flags.batch) {
    // Before the eval and its dataset load (an eval's own `batch` is refused once it has loaded).
    throw new StetError(
      "E_USAGE",
      "--batch sends the calls through provider batches, which one process executes: distributed workers do not batch (docs/batch.md). Run it without --distributed, or without --batch",
    );
  }
  if (flags.resume && flags.reuse !== undefined) {
    throw new StetError(
      "E_USAGE",
      "--reuse starts a new run; a resume goes on with the run's own keys",
    );
  }
  const source = evalSource(target, flags);
  if (flags.watch) return watchCommand(source, flags);
  if (flags.resume) return resumeCommand(flags.resume, { ...flags, eval: evalFile(source) });
  if (flags.runId !== undefined) checkRunId(flags.runId);
  const io = createIo(flags.json ?? false);
  const stale = staleLimit();
  storeLocation(flags.store); // a bad --store or STET_STORE refuses before the eval loads
  const storeOptions = flags.distributed ? workerStaleLimit(stale, leaseTime()) : stale;
  const runId = flags.runId;
  const again = (store: Store) =>
    resumeExisting(store, runId!, { ...flags, eval: evalFile(source) });
  if (runId !== undefined) {
    parseLabels(flags.label ?? [], "--label"); // a malformed --label refuses whatever the id names
    started.runId = runId;
    // A run of this id exists: the resume way, before the eval and its dataset load for a new
    // run (the resume loads them itself, and reads no dataset for a complete run of an unchanged
    // file); a refusal that needs only the run (`--detach`, another `--reuse`) comes first.
    const existing = await openStoreWithRun(flags.store, runId, storeOptions);
    if (existing) {
      try {
        return await again(existing);
      } finally {
        await existing.close();
      }
    }
  }
  const labels = await runLabels(flags);
  // Loaded and checked before the store opens: a bad eval, seed or --output refuses without a run.
  const prepared = await prepareStart(startRequest(flags, source, flags.model, labels));
  if (flags.detach && !prepared.eval.batch) {
    throw new StetError(
      "E_USAGE",
      "--detach leaves a run's provider batches to a later resume: give --batch too (or an eval with `batch`)",
    );
  }
  if (flags.distributed) checkDistributable(prepared.eval);
  started.runId = prepared.runId;
  await prepareRunOutput(flags.output, "--output");
  const store = await openStore(flags.store, storeOptions);
  try {
    const start = flags.distributed ? startDistributed : runEval;
    const detach = flags.detach ? { detach: true } : {};
    try {
      return await withRunOutput(store, io, flags.output, (attach) =>
        runWithUi(io, uiOptions(flags, { model: prepared.model }), (controls) =>
          start({
            ...prepared,
            ...detach,
            store,
            ...stale,
            ...controls,
            ...attach(controls.onEvent),
          }),
        ),
      );
    } catch (error) {
      // Another `stet run --run-id` created it meanwhile: the store's create is atomic, so exactly
      // one of them executes; this one goes the resume way (E_RUN_ACTIVE while that one lives).
      if (
        runId !== undefined &&
        isStetError(error, "E_INVALID_INPUT") &&
        (await store.runs.get(runId))
      ) {
        return await again(store);
      }
      throw error;
    }
  } finally {
    await store.close();
  }
}

/** `--detach` starts one run and leaves it: not with flags that resume, watch or share a run. */
function checkDetach(flags: RunFlags): void {
  if (!flags.detach) return;
  const alone = [
    flags.resume !== undefined && "--resume",
    flags.distributed && "--distributed",
    flags.watch && "--watch",
    flags.baseline !== undefined && "--baseline",
    flags.output !== undefined && "--output",
    [flags.model].flat().length > 1 && "several --model",
  ].filter(Boolean);
  if (alone.length > 0) {
    throw new StetError(
      "E_USAGE",
      `--detach cannot be used with ${alone.join(", ")}: it starts one run, submits its batches and exits`,
    );
  }
}

/**
 * `stet run <eval> --watch`: one store for every iteration (see `watchRuns`). Flags that name one
 * run, or judge one run's exit, are refused with it.
 */
async function watchCommand(
  source: string | { dataset: DatasetEvalConfig },
  flags: RunFlags & { model?: string },
): Promise<number> {
  const alone = [
    flags.resume !== undefined && "--resume",
    flags.runId !== undefined && "--run-id",
    flags.distributed && "--distributed",
    flags.output !== undefined && "--output",
    flags.resumeFrom !== undefined && "--resume-from",
    flags.failUnder !== undefined && "--fail-under",
    flags.baseline !== undefined && "--baseline",
  ].filter(Boolean);
  if (alone.length > 0)
    throw new StetError(
      "E_USAGE",
      `${alone.join(", ")} cannot be used with --watch (every change starts a new run)`,
    );
  const labels = await runLabels(flags);
  const io = createIo(flags.json ?? false);
  const stale = staleLimit();
  storeLocation(flags.store);
  const store = await openStore(flags.store, stale);
  try {
    return await watchRuns({
      io,
      ui: uiOptions(flags, { model: flags.model }),
      request: startRequest(flags, source, flags.model, labels),
      store,
      stale,
    });
  } finally {
    await store.close();
  }
}

/**
 * What `stet run` evaluates: the eval file named, or with `--dataset` a dataset asked of the
 * `--model` with built-in `--scorer`s and no module at all. Throws `E_USAGE` for both or neither.
 */
function evalSource(
  target: string | undefined,
  flags: RunFlags & { model?: string },
): string | { dataset: DatasetEvalConfig } {
  if (flags.dataset === undefined) {
    if (flags.scorer !== undefined || flags.system !== undefined)
      throw new StetError(
        "E_USAGE",
        "--scorer and --system go with --dataset (an eval file has its own)",
      );
    if (target === undefined)
      throw new StetError(
        "E_USAGE",
        "name an eval file, or a dataset with --dataset <file> --model <model>",
      );
    return target;
  }
  if (target !== undefined)
    throw new StetError(
      "E_USAGE",
      `--dataset evaluates a dataset without an eval file: drop ${JSON.stringify(target)}, or --dataset`,
    );
  return {
    dataset: datasetEvalSpec({
      dataset: flags.dataset,
      ...(flags.model === undefined ? {} : { model: flags.model }),
      ...(flags.scorer === undefined ? {} : { scorers: flags.scorer }),
      ...(flags.system === undefined ? {} : { system: flags.system }),
    }),
  };
}

/**
 * What `prepareStart` is asked for a run of `source` with `model`, for `stet run` and for each
 * model of a benchmark (a dataset run's model is its chat solver's, in the source already).
 */
function startRequest(
  flags: RunFlags,
  source: string | { dataset: DatasetEvalConfig },
  model: string | undefined,
  labels: RunLabels,
): StartRequest {
  return {
    labels,
    eval: source,
    model: typeof source === "string" ? model : undefined,
    epochs: flags.epochs,
    concurrency: flags.concurrency,
    limit: flags.limit,
    timeoutMs: flags.timeout,
    maxCost: flags.maxCost,
    ...(flags.cache === undefined ? {} : { cache: flags.cache }),
    ...rateLimitFlag(flags),
    ...(flags.batch ? { batch: true } : {}),
    resumeFrom: flags.resumeFrom,
    output: flags.output,
    ...(flags.runId === undefined ? {} : { runId: flags.runId }),
    ...(flags.loadTimeout === undefined ? {} : { loadTimeoutMs: flags.loadTimeout }),
    ...(flags.reuse === undefined ? {} : { reuse: flags.reuse }),
    paged: { minBytes: PAGED_DATASET_BYTES },
  };
}

/**
 * A new run's labels: those stet records itself (git, GitHub Actions; see `autoLabels`), with
 * the `--label`s over them. A malformed `--label` refuses (`E_USAGE`) before anything runs.
 */
async function runLabels(flags: RunFlags): Promise<RunLabels> {
  const given = parseLabels(flags.label ?? [], "--label");
  return sortedLabels({ ...(await autoLabels(process.cwd(), process.env)), ...given });
}

/** The eval file a resume is given: none for a dataset run, which builds its eval again. */
function evalFile(source: string | { dataset: DatasetEvalConfig }): string | undefined {
  return typeof source === "string" ? source : undefined;
}

/**
 * `stet run <eval> --model a --model b …`: one run per model in one benchmark, executed at once
 * in this process with the given concurrency shared between them, then one comparison table.
 * `stet resume <benchmark-id>` resumes every unfinished run of it.
 */
async function runBenchmark(
  target: string | undefined,
  flags: RunFlags,
  models: string[],
): Promise<number> {
  const alone = [
    flags.resume !== undefined && "--resume",
    flags.runId !== undefined && "--run-id",
    flags.distributed && "--distributed",
    flags.output !== undefined && "--output",
    flags.resumeFrom !== undefined && "--resume-from",
    flags.watch && "--watch",
  ].filter(Boolean);
  if (alone.length > 0)
    throw new StetError(
      "E_USAGE",
      `${alone.join(", ")} cannot be used with several --model (one run per model): run one model at a time`,
    );
  if (new Set(models).size !== models.length)
    throw new StetError("E_USAGE", `--model names a model twice: ${models.join(", ")}`);
  const io = createIo(flags.json ?? false);
  const stale = staleLimit();
  storeLocation(flags.store);
  const benchmark = newBenchmarkId();
  const labels = await runLabels(flags);
  // Every run is loaded and checked before the store opens: one bad model refuses them all.
  const prepared = [];
  for (const model of models) {
    const source = evalSource(target, { ...flags, model });
    prepared.push(await prepareStart(startRequest(flags, source, model, labels)));
  }
  const shares = splitConcurrency(prepared[0]!.eval.concurrency, models.length);
  const store = await openStore(flags.store, stale);
  try {
    const resumeCommand = resumeHint(benchmark, flags.store).command;
    return await runManyWithUi(
      io,
      {
        json: flags.json ?? false,
        failUnder: flags.failUnder,
        resumeCommand,
        benchmarkId: benchmark,
      },
      prepared.map((p, i) => ({
        label: models[i]!,
        execute: (controls) =>
          runEval({
            ...p,
            eval: { ...p.eval, concurrency: shares[i]! },
            benchmark,
            store,
            ...stale,
            ...controls,
          }),
      })),
    );
  } finally {
    await store.close();
  }
}
