import { StetError } from "../core/errors.js";
import { PairedAccumulator, type PairedComparison } from "../core/paired-stats.js";
import type { Run } from "../core/types.js";
import { byteOrder } from "../core/keys.js";
import type { Store } from "../store/types.js";
import { requireRun } from "./require-run.js";
import { SampleCursor, sampleValuePages, type SampleValues } from "./sample-values.js";

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
  /** Samples whose value dropped from A to B, by sample id (UTF-8 byte order, the stores'). */
  regressedIds: string[];
}

export interface RunDiff {
  runA: string;
  runB: string;
  /** Each run's eval: equal unless the diff was asked with `allowDifferentEvals`. */
  evalA: string;
  evalB: string;
  scorers: ScorerDiff[];
  /** Sample ids in one run's snapshot only (byte order): reported, never paired. */
  onlyInA: string[];
  onlyInB: string[];
  /** Ids in both runs whose content (fingerprint) differs: not the same sample, so not paired. */
  changed: string[];
}

export interface DiffOptions {
  /** Compare runs of two different evals (refused otherwise: their samples do not pair). */
  allowDifferentEvals?: boolean;
  /** Samples read per page of each run (1,000 by default). */
  pageSize?: number;
}

/**
 * Two runs compared sample by sample: each run's outcomes reduced over epochs with its own
 * reducer (the fold of its report), paired by sample id, and for each scorer both have the
 * paired statistics (`PairedAccumulator`, `comparePaired`'s). Both runs are read a page at a
 * time in sample-id order and merged, so what it holds grows with the differences it reports
 * (ids only in one run, changed, regressed), not with the runs (see `PairedAccumulator` for
 * scores with many distinct values). Throws `E_RUN_NOT_FOUND`, and `E_DIFFERENT_EVALS` for
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
  const common = runA.config.scorers.filter((s) => runB.config.scorers.includes(s));
  const scorers = common.map((scorer) => new ScorerPairs(scorer, runA, runB));
  const diff: RunDiff = {
    runA: runA.id,
    runB: runB.id,
    evalA: runA.evalName,
    evalB: runB.evalName,
    scorers: [],
    onlyInA: [],
    onlyInB: [],
    changed: [],
  };
  // A merge join of the two runs' samples, both in sample-id order: a page of each is held.
  const a = new SampleCursor(sampleValuePages(store, runA, options.pageSize));
  const b = new SampleCursor(sampleValuePages(store, runB, options.pageSize));
  for (;;) {
    const [x, y] = [await a.current(), await b.current()];
    if (!x && !y) break;
    const order = !x ? 1 : !y ? -1 : byteOrder(x.id, y.id);
    if (order < 0) {
      diff.onlyInA.push(x!.id);
      a.advance();
    } else if (order > 0) {
      diff.onlyInB.push(y!.id);
      b.advance();
    } else {
      if (x!.fingerprint !== y!.fingerprint) diff.changed.push(x!.id);
      else for (const pairs of scorers) pairs.add(x!, y!);
      a.advance();
      b.advance();
    }
  }
  diff.scorers = scorers.map((pairs) => pairs.finish());
  return diff;
}

/** One common scorer's pairs, taken a sample at a time. */
class ScorerPairs {
  readonly #scorer: string;
  readonly #ia: number;
  readonly #ib: number;
  readonly #pairs = new PairedAccumulator();
  readonly #regressedIds: string[] = [];
  #unpaired = 0;

  constructor(scorer: string, runA: Run, runB: Run) {
    this.#scorer = scorer;
    this.#ia = runA.config.scorers.indexOf(scorer);
    this.#ib = runB.config.scorers.indexOf(scorer);
  }

  add(a: SampleValues, b: SampleValues): void {
    const x = a.values[this.#ia] ?? null;
    const y = b.values[this.#ib] ?? null;
    if (x === null || y === null) {
      this.#unpaired++;
      return;
    }
    this.#pairs.add(x, y);
    if (y < x) this.#regressedIds.push(a.id);
  }

  finish(): ScorerDiff {
    const stats = this.#pairs.finish();
    return {
      scorer: this.#scorer,
      paired: stats.n,
      unpaired: this.#unpaired,
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
      regressedIds: this.#regressedIds,
    };
  }
}
