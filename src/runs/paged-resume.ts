import { countedPlan, type ResumePlan } from "../core/plan.js";
import type { Run } from "../core/types.js";
import { countedResume } from "../engine/figures-report.js";
import type { SnapshotResume } from "../engine/snapshot-keys.js";
import type { Store } from "../store/types.js";

/**
 * The stamp a resume asks the run's dataset file for to execute from the run's snapshot a page
 * at a time (`pagedResume`) instead of loading the file: the one the run recorded, when the
 * resume asked for pages (`stet resume` does, for files of `PAGED_DATASET_BYTES`), plans sparse
 * (no re-run asked or recorded, not a worker), and the run was not started with `--reuse`
 * (whose owed seeding plans against listed keys).
 *
 * @example const stamp = pagedResumeStamp(run, { paged: { minBytes: 8 << 20 } }, true);
 */
export function pagedResumeStamp(
  run: Run,
  options: { paged?: { minBytes: number } },
  sparse: boolean,
): string | undefined {
  const { datasetStamp, rerun, reuse } = run.config;
  if (!options.paged || !sparse) return undefined;
  if ((rerun?.length ?? 0) > 0 || reuse !== undefined) return undefined;
  return datasetStamp;
}

/**
 * The plan of a resume whose dataset file still has the run's stamp, so that its snapshot is
 * every sample as the file has it: counted from the figures the store keeps (`countedResume`),
 * its keys then read from the snapshot a page at a time and each page planned with its own
 * attempts (`SnapshotKeys`' `resume`, with the in-flight keys returned here). Nothing of the
 * dataset, no list of keys, samples or attempts is held; stored scorer errors are scored again
 * as they are found a page at a time (`pagedRescoreUnits`). Undefined when the figures cannot
 * count it (kept with another reducer): the resume then loads the dataset whole. With
 * `rerunErrors: false` (`--no-rerun-errors`) the errored keys are kept, scorer errors too, as
 * `planRun` keeps them.
 *
 * @example const paged = await pagedResume(store, run, true); // { plan, resume } or undefined
 */
export async function pagedResume(
  store: Store,
  run: Run,
  rerunErrors = true,
): Promise<{ plan: ResumePlan; resume: SnapshotResume } | undefined> {
  const left = await countedResume(store, run);
  if (!left) return undefined;
  const { plan, inflight } = left;
  const counts = rerunErrors
    ? plan
    : {
        ...plan,
        toExecute: plan.toExecute - plan.errored,
        toRescore: 0,
        errored: 0,
        erroredKept: plan.errored + plan.toRescore,
      };
  return { plan: countedPlan(counts), resume: { inflight, rerunErrors } };
}
