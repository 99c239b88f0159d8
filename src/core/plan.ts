import { KeyList } from "./key-list.js";
import { keyString } from "./keys.js";
import type { AttemptErrorType, AttemptStatus, Key, RerunRequest, SampleRecord } from "./types.js";

/** The fields of a stored attempt that planning looks at. */
export interface AttemptFacts extends Key {
  status: AttemptStatus;
  fingerprint: string;
  /** Its number (see RerunRequest.after; absent counts as 0); with `error`, what tells a scorer
   * error (re-scored) from a solver's (re-run). */
  attempt?: number;
  error?: { type: AttemptErrorType } | null;
}

/** A stored attempt to score again: the key and the attempt's number. */
export interface AttemptRef extends Key {
  attempt: number;
}

export interface PlanInput {
  /** The samples the run recorded when it started, in dataset order. */
  snapshot: readonly SampleRecord[];
  /** The dataset as it is now (absent: trust the snapshot). */
  current?: ReadonlyMap<string, SampleRecord>;
  epochs: number;
  attempts: readonly AttemptFacts[];
  /** Keys dispatched but never committed. */
  inflight: readonly Key[];
  /** Re-run keys whose latest attempt is an error (default true). */
  rerunErrors?: boolean;
  /** Re-run the keys of samples whose content changed, using the new content. */
  rerunChanged?: boolean;
  /**
   * Keys to execute again though they have a scored attempt: each counts as scored only by a
   * scored attempt numbered after its `after` (see RunConfig.rerun).
   */
  rerun?: readonly RerunRequest[];
  /**
   * A sparse plan (what a resume reads when the store tells it which samples still have work,
   * `reads.openSampleHeads`): the only samples that may have a key without a scored attempt of
   * their snapshot fingerprint. Every key of any other sample counts as preserved, and `attempts`
   * need hold only the attempts of these samples, of changed ones and of re-run ones (which count
   * as open whatever this says). Absent: every sample is open, and `attempts` holds every attempt.
   */
  open?: ReadonlySet<string>;
}

/** A list's length alone: what an execution needs of `Plan.toRescore`. */
export interface Counted {
  readonly length: number;
}

/**
 * What a run still has to execute (`planRun`). `Rescore` is how its stored attempts to score
 * again are held: listed (a resume's scorer errors), or counted only (`ExecutionPlan`).
 */
export interface Plan<Rescore extends Counted = AttemptRef[]> {
  total: number;
  /** Keys with a scored attempt for the sample's effective fingerprint: never re-executed. */
  preserved: number;
  /** Keys to execute, epoch by epoch, in dataset order (compact: see KeyList). */
  toExecute: KeyList;
  /**
   * Keys whose outcome is a scorer error (the solver succeeded): their stored output is scored
   * again, the solver is not called. Not in `errored`, which counts the keys re-executed.
   */
  toRescore: Rescore;
  neverStarted: number;
  interrupted: number;
  errored: number;
  /** Errored keys left alone because `rerunErrors` is false. */
  erroredKept: number;
  /** Sample ids whose content changed since the run started. */
  changed: string[];
  /** Keys of changed samples that will execute (with `rerunChanged`; else the run must refuse). */
  changedKeys: number;
  /** Keys re-run on request (`rerun`) that will execute. */
  rerun: number;
  /**
   * Per key string (see keyString) of a re-run key that will execute, the attempt number its new
   * attempt follows: what the engine puts on its drafts (`AttemptDraft.rerunAfter`).
   */
  rerunAfter: Map<string, number>;
  /**
   * Per key string of a key that will execute and whose latest attempt (of the sample's current
   * content) ended in error, that attempt's number: the new attempt replays its journal.
   */
  replayFrom: Map<string, number>;
  /** Sample ids in the run but no longer in the dataset: executed from the run's copy. */
  missing: string[];
  /** The samples to execute with: the snapshot, with changed ones replaced when re-running them. */
  samples: SampleRecord[];
}

/**
 * A plan as an execution takes it: its attempts to score again may be a count only (a rescore's,
 * whose units are read from the store a page at a time as they are scored: never all listed).
 */
export type ExecutionPlan = Omit<Plan<Counted>, "toExecute"> & {
  /**
   * Listed (the keys the execution takes), or counted only: a new run executing from its
   * snapshot's pages (`Execution.keys`), whose plan holds neither keys nor samples.
   */
  toExecute: KeyList | Counted;
};

/**
 * A resume's plan: its keys and attempts to score again listed (`planRun`'s), or counted only
 * (`countedPlan`: a resume that executes from the snapshot's pages).
 */
export type ResumePlan = Omit<Plan, "toExecute" | "toRescore"> & {
  toExecute: KeyList | Counted;
  toRescore: AttemptRef[] | Counted;
};

/**
 * The keys a plan lists; undefined for one that only counts them (`snapshotPlan`), whose
 * execution takes its keys, and their samples, from its `Execution.keys`.
 */
export function listedKeys(plan: ExecutionPlan): KeyList | undefined {
  return plan.toExecute instanceof KeyList ? plan.toExecute : undefined;
}

/**
 * The plan of a new run of `samples` samples (none executed yet) that executes from its stored
 * snapshot a page at a time: counts only, no key or sample listed.
 *
 * @example const plan = snapshotPlan(1_000_000, 1); plan.toExecute.length; // 1000000
 */
export function snapshotPlan(samples: number, epochs: number): ExecutionPlan {
  const total = samples * epochs;
  return {
    total,
    preserved: 0,
    toExecute: { length: total },
    neverStarted: total,
    ...noneListed(),
  };
}

/**
 * The plan of a resume that executes from the run's snapshot a page at a time (`SnapshotKeys`
 * with its `resume`, `pagedRescoreUnits`), from its counts alone (`countedResume`): no key,
 * sample or attempt to score again listed, nothing re-run. Its `changed` are the ids of
 * `changed`, the samples whose content the dataset changed, and its `samples` their new records
 * (what a claim with `rerunChanged` writes into the snapshot), not the run's samples.
 *
 * @example const plan = countedPlan(left.plan); plan.toExecute.length; // the keys left
 */
export function countedPlan(
  counts: CountedResume,
  changed: readonly SampleRecord[] = [],
): ResumePlan {
  const { total, preserved, toExecute, toRescore, neverStarted, interrupted, errored } = counts;
  return {
    ...noneListed(),
    total,
    preserved,
    neverStarted,
    interrupted,
    errored,
    erroredKept: counts.erroredKept,
    changedKeys: counts.changedKeys,
    rerun: counts.rerun,
    changed: changed.map((r) => r.sample.id),
    samples: [...changed],
    toExecute: { length: toExecute },
    toRescore: { length: toRescore },
  };
}

/** The counts a plan of a resume from the snapshot's pages is made of (see countedPlan). */
export interface CountedResume {
  total: number;
  preserved: number;
  toExecute: number;
  toRescore: number;
  neverStarted: number;
  interrupted: number;
  errored: number;
  erroredKept: number;
  changedKeys: number;
  /** Keys of re-run requests with nothing after the attempt they follow. */
  rerun: number;
}

/**
 * Decides what a run still has to execute. Pure: the same inputs give the same plan whatever
 * order attempts completed in.
 *
 * @example
 * const plan = planRun({ snapshot, epochs: 3, attempts: heads, inflight: [] });
 * plan.toExecute; // the keys without a scored attempt
 */
export function planRun(input: PlanInput): Plan {
  const { current, epochs, rerunErrors = true, rerunChanged = false } = input;
  const changed: string[] = [];
  const missing: string[] = [];
  const samples = input.snapshot.map((record) => {
    const now = current?.get(record.sample.id);
    if (current && !now) missing.push(record.sample.id);
    if (!now || now.fingerprint === record.fingerprint) return record;
    changed.push(record.sample.id);
    return rerunChanged ? now : record;
  });
  const changedIds = new Set(changed);

  const after = new Map((input.rerun ?? []).map((r) => [keyString(r), r.after]));
  const rerunIds = new Set((input.rerun ?? []).map((r) => r.sampleId));
  const { open } = input;
  const isOpen = (id: string) =>
    open === undefined || open.has(id) || changedIds.has(id) || rerunIds.has(id);
  const latest = new Map<string, AttemptFacts>();
  const fingerprintOf = new Map<string, string>();
  for (const r of samples) if (isOpen(r.sample.id)) fingerprintOf.set(r.sample.id, r.fingerprint);
  for (const attempt of input.attempts) {
    if (fingerprintOf.get(attempt.sampleId) !== attempt.fingerprint) continue;
    const k = keyString(attempt);
    // A re-run key's attempts up to the one it follows are history: they decide nothing.
    const follows = after.get(k);
    if (follows !== undefined && (attempt.attempt ?? 0) <= follows) continue;
    if (latest.get(k)?.status !== "scored") latest.set(k, attempt);
  }
  const inflight = new Set(input.inflight.map(keyString));

  const plan: Plan = {
    total: samples.length * epochs,
    preserved: 0,
    toExecute: new KeyList(samples, epochs),
    toRescore: [],
    neverStarted: 0,
    interrupted: 0,
    errored: 0,
    erroredKept: 0,
    changed,
    changedKeys: 0,
    rerun: 0,
    rerunAfter: new Map(),
    replayFrom: new Map(),
    missing,
    samples,
  };
  for (let epoch = 1; epoch <= epochs; epoch++) {
    for (let index = 0; index < samples.length; index++) {
      const { sample } = samples[index]!;
      if (!isOpen(sample.id)) {
        plan.preserved++;
        continue;
      }
      const key = { sampleId: sample.id, epoch };
      const k = keyString(key);
      const outcome = latest.get(k);
      const status = outcome?.status;
      if (status === "scored") {
        plan.preserved++;
        continue;
      }
      const follows = after.get(k);
      // The marker goes on every draft of a re-run key, whatever else it is, so the store lets
      // its new attempt follow the scored one.
      if (follows !== undefined) plan.rerunAfter.set(k, follows);
      if (follows !== undefined && status === undefined) plan.rerun++;
      else if (changedIds.has(sample.id)) plan.changedKeys++;
      else if (inflight.has(k)) plan.interrupted++;
      else if (status === "error") {
        // A re-run that errored leaves the key's earlier scored attempt as its outcome.
        if (!rerunErrors && follows !== undefined) {
          plan.preserved++;
          continue;
        }
        if (!rerunErrors) {
          plan.erroredKept++;
          continue;
        }
        if (outcome?.error?.type === "scorer" && outcome.attempt !== undefined) {
          plan.toRescore.push({ sampleId: sample.id, epoch, attempt: outcome.attempt });
          continue;
        }
        plan.errored++;
      } else plan.neverStarted++;
      plan.toExecute.push(index, epoch);
      if (status === "error" && outcome?.attempt !== undefined && !changedIds.has(sample.id)) {
        plan.replayFrom.set(k, outcome.attempt);
      }
    }
  }
  return plan;
}

/**
 * The plan of a run whose `total` keys all have a scored attempt of their sample's content, as
 * the store's figures count them, and whose snapshot is every sample as the dataset has it (its
 * file's stamp unchanged): every key preserved, nothing to execute, no sample read. Its `samples`
 * are empty: such a plan only settles a run whose status already says it is complete.
 *
 * @example settledPlan(1_000_000).preserved; // 1000000
 */
export function settledPlan(total: number): Plan {
  const toExecute = new KeyList([], 1);
  return { total, preserved: total, toExecute, neverStarted: 0, ...noneListed() };
}

/** What a plan of counts alone lists: no sample, no key to score again, change or re-run. */
function noneListed() {
  return {
    toRescore: [],
    interrupted: 0,
    errored: 0,
    erroredKept: 0,
    changed: [],
    changedKeys: 0,
    rerun: 0,
    rerunAfter: new Map<string, number>(),
    replayFrom: new Map<string, number>(),
    missing: [],
    samples: [],
  };
}
