import { rateLimitFlag } from "../flag-values.js";
import {
  executeResume,
  planResume,
  settleResume,
  type PlannedResume,
} from "../../runs/resume-run.js";
import { staleLimit } from "../../runs/stale-limit.js";
import { resumeBatch } from "../../runs/run-batches.js";
import { PAGED_DATASET_BYTES } from "../../runs/start-run.js";
import type { Store } from "../../store/types.js";
import { StetError } from "../../core/errors.js";
import { runModel } from "../../core/run-model.js";
import type { Run } from "../../core/types.js";
import { benchmarkRuns } from "../../runs/benchmark.js";
import { workRun } from "../../runs/work-run.js";
import { createIo, type Io } from "../io.js";
import { withNextCommands } from "../resume-hint.js";
import { openStore } from "../open-store.js";
import { renderPlan } from "../render/summary.js";
import { prepareRunOutput, withRunOutput } from "../run-output.js";
import { resumeHint } from "../resume-hint.js";
import { runManyWithUi, type ManyEntry } from "../run-many.js";
import { runWithUi, uiOptions } from "../run-ui.js";

export interface ResumeFlags {
  store?: string;
  json?: boolean;
  eval?: string;
  rerunChanged?: boolean;
  rerunErrors?: boolean;
  failUnder?: number;
  /** This invocation's spend cap on the run's total (default: the run's own), USD. */
  maxCost?: number;
  /** `--cache` / `--no-cache`. */
  cache?: boolean;
  /** `--rpm` / `--tpm`: the main model's rate limit. */
  rpm?: number;
  tpm?: number;
  /** `--batch`. */
  batch?: boolean;
  /** `--detach`: submit what is left in batches and exit; a later resume collects them. */
  detach?: boolean;
  /** Results JSONL to append to; by default the one the run was started with (if any). */
  output?: string;
  /** Refused unless it is the run's model. */
  model?: string;
  /** Go on with an eval that differs from the run's identity, recording the change. */
  allowEvalChange?: boolean;
  /** Sample ids whose keys execute again (`--rerun q3,q7`). */
  rerun?: string[];
  /** Execute again the keys whose outcome scores below 1 on some scorer. */
  rerunFailed?: boolean;
  /** Execute again the keys whose outcome a per-sample limit ended. */
  rerunLimited?: boolean;
  /** Afterwards, delete the journal of the run's committed attempts (open entries stay). */
  pruneJournal?: boolean;
  /** How long loading the eval module may take, ms. */
  loadTimeout?: number;
}

/** `stet resume <run-id>`: print the plan, then execute only the keys without a scored attempt. */
export async function resumeCommand(runId: string, flags: ResumeFlags): Promise<number> {
  const store = await openStore(flags.store, staleLimit());
  try {
    return await resumeInStore(store, runId, flags);
  } finally {
    await store.close();
  }
}

/** What `planResume` is asked from the flags, for one run and for each run of a benchmark. */
function planOptions(flags: ResumeFlags) {
  return {
    ...(flags.eval === undefined ? {} : { evalFile: flags.eval }),
    ...(flags.rerunChanged === undefined ? {} : { rerunChanged: flags.rerunChanged }),
    ...(flags.rerunErrors === undefined ? {} : { rerunErrors: flags.rerunErrors }),
    ...(flags.model === undefined ? {} : { model: flags.model }),
    ...(flags.allowEvalChange ? { allowEvalChange: true } : {}),
    ...(flags.rerun === undefined ? {} : { rerun: flags.rerun }),
    ...(flags.rerunFailed ? { rerunFailed: true } : {}),
    ...(flags.rerunLimited ? { rerunLimited: true } : {}),
    ...(flags.maxCost === undefined ? {} : { maxCost: flags.maxCost }),
    ...(flags.cache === undefined ? {} : { cache: flags.cache }),
    ...rateLimitFlag(flags),
    ...(flags.batch ? { batch: true } : {}),
    ...(flags.loadTimeout === undefined ? {} : { loadTimeoutMs: flags.loadTimeout }),
    // A large dataset file still as the run read it is not read: the resume pages the snapshot.
    paged: { minBytes: PAGED_DATASET_BYTES },
  };
}

/** `resumeCommand` in a store the caller opened (and closes). */
export async function resumeInStore(
  store: Store,
  runId: string,
  flags: ResumeFlags,
): Promise<number> {
  const io = createIo(flags.json ?? false);
  const stale = staleLimit();
  const stored = await store.runs.get(runId);
  if (flags.detach && (stored?.config.distributed || (!stored && BENCHMARK_ID.test(runId)))) {
    throw new StetError(
      "E_USAGE",
      "--detach resumes one run executed by one process: not a distributed run, nor a benchmark",
    );
  }
  if (stored?.config.distributed) return resumeDistributed(io, store, runId, flags);
  // Not a run: a benchmark's id (`stet run --model a --model b` printed it) resumes its runs.
  if (!stored && BENCHMARK_ID.test(runId)) {
    const runs = await benchmarkRuns(store, runId);
    if (runs.length > 0) return resumeBenchmark(io, store, runId, runs, flags);
  }
  const planning = await planResume({ store, runId, ...planOptions(flags), ...stale });
  let resume: PlannedResume;
  if (planning.ok) resume = await withDetach(store, planning.resume, flags);
  else if (planning.refusal.reason === "nothing-to-resume") {
    resume = planning.refusal.resume;
    if (resume.run.status === "completed") {
      io.say(`run ${runId} is complete: nothing to execute`);
    }
  } else {
    if (planning.refusal.reason === "changed-samples") io.say(renderPlan(planning.refusal.plan));
    throw withNextCommands(planning.refusal.error, runId, flags.store);
  }
  const output = flags.output ?? resume.run.config.output;
  // Before the claim: a Results file that cannot be written, or holds what the run cannot append
  // to, refuses before anything runs.
  const flag = flags.output === undefined ? "the run's --output" : "--output";
  await prepareRunOutput(output, flag, resume.run.id);
  const code = await withRunOutput(store, io, output, (attach) =>
    runWithUi(io, uiOptions(flags, { model: resume.run.config.model }), (controls) => {
      const options = { store, ...stale, ...controls, ...attach(controls.onEvent) };
      return planning.ok ? executeResume(resume, options) : settleResume(resume, options);
    }),
  );
  if (flags.pruneJournal) {
    const pruned = await store.journal.prune(runId);
    io.say(`journal: ${pruned} entries of finished attempts deleted`);
  }
  return code;
}

/**
 * The planned resume with `--detach`, refused (`E_USAGE`, before anything is claimed) when the
 * resume would send no provider batch to leave.
 */
async function withDetach(
  store: Store,
  resume: PlannedResume,
  flags: ResumeFlags,
): Promise<PlannedResume> {
  if (!flags.detach) return resume;
  if (!(await resumeBatch(store, resume.run.id, resume.eval)).batch) {
    throw new StetError(
      "E_USAGE",
      `--detach leaves a run's provider batches to a later resume: run ${resume.run.id} sends none (give --batch, or an eval with \`batch\`)`,
    );
  }
  return { ...resume, detach: true };
}

/**
 * `stet resume` of a distributed run: opens it to workers again if it is interrupted or errored,
 * then works on it as one of them (`stet worker --run`), alongside any others.
 */
async function resumeDistributed(
  io: Io,
  store: Store,
  runId: string,
  flags: ResumeFlags,
): Promise<number> {
  const unsupported = [
    flags.rerun && "--rerun",
    flags.rerunFailed && "--rerun-failed",
    flags.rerunLimited && "--rerun-limited",
    flags.rerunChanged && "--rerun-changed",
    flags.allowEvalChange && "--allow-eval-change",
    flags.rerunErrors === false && "--no-rerun-errors",
  ].filter(Boolean);
  if (unsupported.length > 0) {
    throw new StetError(
      "E_USAGE",
      `${unsupported.join(", ")} cannot be used with run ${runId}, a distributed run: its workers execute every key without a scored attempt`,
    );
  }
  const stale = staleLimit();
  return runWithUi(io, uiOptions(flags, {}), (controls) =>
    workRun({
      store,
      runId,
      reopen: true,
      ...stale,
      ...controls,
      ...(flags.eval === undefined ? {} : { evalFile: flags.eval }),
      ...(flags.maxCost === undefined ? {} : { maxCost: flags.maxCost }),
      ...(flags.cache === undefined ? {} : { cache: flags.cache }),
      ...rateLimitFlag(flags),
      ...(flags.loadTimeout === undefined ? {} : { loadTimeoutMs: flags.loadTimeout }),
      paged: { minBytes: PAGED_DATASET_BYTES },
    }),
  );
}

/** What a benchmark id looks like (`newBenchmarkId`); a run of that id wins over a benchmark. */
const BENCHMARK_ID = /^b_[a-z0-9]{10}$/;

/**
 * `stet resume <benchmark-id>`: every run of the benchmark planned first (any refusal but
 * "nothing to resume" refuses them all, naming the run), then the unfinished ones executed at
 * once, each with its own recorded concurrency, and the comparison table of all of them.
 */
async function resumeBenchmark(
  io: Io,
  store: Store,
  benchmarkId: string,
  runs: readonly Run[],
  flags: ResumeFlags,
): Promise<number> {
  const unsupported = [
    flags.eval !== undefined && "--eval",
    flags.model !== undefined && "--model",
    flags.rerun !== undefined && "--rerun",
    flags.output !== undefined && "--output",
  ].filter(Boolean);
  if (unsupported.length > 0)
    throw new StetError(
      "E_USAGE",
      `${unsupported.join(", ")} cannot be used when resuming benchmark ${benchmarkId}: resume its runs one by one for that`,
    );
  const stale = staleLimit();
  const entries: ManyEntry[] = [];
  for (const run of runs) {
    const planning = await planResume({ store, runId: run.id, ...planOptions(flags), ...stale });
    let resume: PlannedResume;
    if (planning.ok) resume = planning.resume;
    else if (planning.refusal.reason === "nothing-to-resume") resume = planning.refusal.resume;
    else {
      const { error } = planning.refusal;
      throw new StetError(
        error.code,
        `run ${run.id} of benchmark ${benchmarkId}: ${error.message}`,
        {
          cause: error,
          ...(error.details === undefined ? {} : { details: error.details }),
        },
      );
    }
    const execute = planning.ok ? executeResume : settleResume;
    entries.push({
      label: runModel(run.config) ?? run.id,
      execute: (controls) => execute(resume, { store, ...stale, ...controls }),
    });
  }
  return runManyWithUi(
    io,
    {
      json: flags.json ?? false,
      ...(flags.failUnder === undefined ? {} : { failUnder: flags.failUnder }),
      resumeCommand: resumeHint(benchmarkId, flags.store).command,
      benchmarkId,
    },
    entries,
  );
}
