import { StetError } from "../core/errors.js";
import { OutcomeFold } from "../core/outcome-fold.js";
import { comparePaired, type PairedComparison } from "../core/paired-stats.js";
import type { Run } from "../core/types.js";
import type { AttemptHead, Store } from "../store/types.js";
import { requireRun } from "./require-run.js";

/** The p-value below which a difference counts as significant. */
export const DIFF_ALPHA = 0.05;

/** One scorer common to both runs, compared over the samples both scored. */
export interface ScorerDiff extends Omit<PairedComparison, "n"> {
  scorer: string;
  /** Samples paired (both runs have a reduced value for this scorer). */
  paired: number;
  /** Samples of both runs left out because one run has no value for this scorer (error, pending). */
  unpaired: number;
  /** p < DIFF_ALPHA and B lower: what `--fail-on-regression` fails on. */
  significantRegression: boolean;
  /** Samples whose value dropped from A to B, by sample id (binary order). */
  regressedIds: string[];
}

export interface RunDiff {
  runA: string;
  runB: string;
  /** Each run's eval: equal unless the diff was asked with `allowDifferentEvals`. */
  evalA: string;
  evalB: string;
  scorers: ScorerDiff[];
  /** Sample ids in one run's snapshot only: reported, never paired. */
  onlyInA: string[];
  onlyInB: string[];
  /** Ids in both runs whose content (fingerprint) differs: not the same sample, so not paired. */
  changed: string[];
}

interface RunValues {
  run: Run;
  fingerprints: Map<string, string>;
  /** Per sample id, the epoch-reduced value of each of the run's scorers. */
  values: Map<string, readonly (number | null)[]>;
}

export interface DiffOptions {
  /** Compare runs of two different evals (refused otherwise: their samples do not pair). */
  allowDifferentEvals?: boolean;
}

/**
 * Two runs compared sample by sample: each run's outcomes reduced over epochs with its own
 * reducer (the fold of its report), paired by sample id, and for each scorer both have the
 * paired statistics (`comparePaired`). Throws `E_RUN_NOT_FOUND`, and `E_DIFFERENT_EVALS` for
 * runs of two evals unless `allowDifferentEvals`: a sample id of one eval is not the same sample
 * in another, so a paired test over them would be a number without a meaning.
 *
 * @example const diff = await diffRuns(store, "r_base", "r_new"); diff.scorers[0]?.pValue;
 */
export async function diffRuns(
  store: Store,
  runIdA: string,
  runIdB: string,
  options: DiffOptions = {},
): Promise<RunDiff> {
  const [runA, runB] = await Promise.all([requireRun(store, runIdA), requireRun(store, runIdB)]);
  if (runA.evalName !== runB.evalName && !options.allowDifferentEvals)
    throw new StetError(
      "E_DIFFERENT_EVALS",
      `runs ${runA.id} and ${runB.id} are of different evals ("${runA.evalName}" and ` +
        `"${runB.evalName}"): their samples do not pair, so a paired comparison would mean nothing`,
    );
  const [a, b] = await Promise.all([runValues(store, runA), runValues(store, runB)]);
  const inBoth: string[] = [];
  const changed: string[] = [];
  const onlyInA: string[] = [];
  for (const [id, print] of a.fingerprints) {
    const other = b.fingerprints.get(id);
    if (other === undefined) onlyInA.push(id);
    else if (other === print) inBoth.push(id);
    else changed.push(id);
  }
  const onlyInB = [...b.fingerprints.keys()].filter((id) => !a.fingerprints.has(id));
  const common = a.run.config.scorers.filter((s) => b.run.config.scorers.includes(s));
  return {
    runA: a.run.id,
    runB: b.run.id,
    evalA: a.run.evalName,
    evalB: b.run.evalName,
    scorers: common.map((scorer) => diffScorer(scorer, a, b, inBoth.sort(binary))),
    onlyInA: onlyInA.sort(binary),
    onlyInB: onlyInB.sort(binary),
    changed: changed.sort(binary),
  };
}

function diffScorer(scorer: string, a: RunValues, b: RunValues, ids: string[]): ScorerDiff {
  const ia = a.run.config.scorers.indexOf(scorer);
  const ib = b.run.config.scorers.indexOf(scorer);
  const xs: number[] = [];
  const ys: number[] = [];
  const regressedIds: string[] = [];
  for (const id of ids) {
    const x = a.values.get(id)?.[ia] ?? null;
    const y = b.values.get(id)?.[ib] ?? null;
    if (x === null || y === null) continue;
    xs.push(x);
    ys.push(y);
    if (y < x) regressedIds.push(id);
  }
  const stats = comparePaired(xs, ys);
  return {
    scorer,
    paired: stats.n,
    unpaired: ids.length - stats.n,
    meanA: stats.meanA,
    meanB: stats.meanB,
    delta: stats.delta,
    ciLow: stats.ciLow,
    ciHigh: stats.ciHigh,
    pValue: stats.pValue,
    test: stats.test,
    significantRegression: (stats.delta ?? 0) < 0 && stats.pValue < DIFF_ALPHA,
    improved: stats.improved,
    regressed: stats.regressed,
    unchanged: stats.unchanged,
    regressedIds,
  };
}

async function runValues(store: Store, run: Run): Promise<RunValues> {
  const prints = await store.reads.listSampleFingerprints(run.id);
  const fingerprints = new Map(prints.map((p) => [p.sampleId, p.fingerprint]));
  const values = new Map<string, readonly (number | null)[]>();
  // The report's own fold, so a diff's means are exactly the runs' reported metrics.
  const fold = new OutcomeFold<AttemptHead>({
    fingerprintOf: (id) => fingerprints.get(id),
    scorers: run.config.scorers,
    reducer: run.config.reducer,
    isNow: () => false,
    onSample: (sampleId, reduced) => values.set(sampleId, reduced),
  });
  for await (const page of store.reads.attemptHeadPages(run.id))
    for (const head of page) fold.add(head);
  fold.finish();
  return { run, fingerprints, values };
}

function binary(x: string, y: string): number {
  return x < y ? -1 : x > y ? 1 : 0;
}
