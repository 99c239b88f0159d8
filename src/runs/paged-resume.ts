import { countedPlan, type ResumePlan } from "../core/plan.js";
import type { Key, Run } from "../core/types.js";
import { countedResume } from "../engine/figures-report.js";
import type { Store } from "../store/types.js";

/**
 * The stamp a resume asks the run's dataset file for to execute from the run's snapshot a page
 * at a time (`pagedResume`) instead of loading the file: the one the run recorded, when the
 * resume asked for pages (`stet resume` does, for files of `PAGED_DATASET_BYTES`), plans sparse
 * (no re-run asked or recorded, not a worker), keeps errored keys' re-runs (the default), and
 * the run was not started with `--reuse` (whose owed seeding plans against listed keys).
 *
 * @example const stamp = pagedResumeStamp(run, { paged: { minBytes: 8 << 20 } }, true);
 */
export function pagedResumeStamp(
  run: Run,
  options: { paged?: { minBytes: number }; rerunErrors?: boolean },
  sparse: boolean,
): string | undefined {
  const { datasetStamp, rerun, reuse } = run.config;
  if (!options.paged || !sparse || options.rerunErrors === false) return undefined;
  if ((rerun?.length ?? 0) > 0 || reuse !== undefined) return undefined;
  return datasetStamp;
}

/**
 * The plan of a resume whose dataset file still has the run's stamp, so that its snapshot is
 * every sample as the file has it: counted from the figures the store keeps (`countedResume`),
 * its keys then read from the snapshot a page at a time and each page planned with its own
 * attempts (`SnapshotKeys`' `resume`, with the in-flight keys returned here). Nothing of the
 * dataset, no list of keys, samples or attempts is held. Undefined when a stored scorer error
 * is to be scored again (those units are listed from the plan's samples) or the figures cannot
 * count it: the resume then loads the dataset whole.
 *
 * @example const paged = await pagedResume(store, run); // { plan, inflight } or undefined
 */
export async function pagedResume(
  store: Store,
  run: Run,
): Promise<{ plan: ResumePlan; inflight: Key[] } | undefined> {
  const left = await countedResume(store, run);
  if (!left || left.plan.toRescore > 0) return undefined;
  return { plan: countedPlan(left.plan), inflight: left.inflight };
}
