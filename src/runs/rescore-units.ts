import { keyString } from "../core/keys.js";
import type { AttemptRef } from "../core/plan.js";
import type { Run, SampleRecord } from "../core/types.js";
import type { RescoreUnit } from "../engine/execute-scoring.js";
import { plannedPages, type SnapshotResume } from "../engine/snapshot-keys.js";
import type { Store } from "../store/types.js";

/**
 * The stored attempts behind `refs`, as units to score again: their outputs, their current
 * scores and the sample they executed. Every scorer that has no score (it threw, or never ran)
 * runs, and those in `rerun`; the others are carried.
 */
export async function rescoreUnits(
  store: Store,
  runId: string,
  refs: readonly AttemptRef[],
  samples: readonly SampleRecord[],
  rerun: ReadonlySet<string> = new Set(),
): Promise<RescoreUnit[]> {
  const records = new Map(samples.map((r) => [r.sample.id, r]));
  const wanted = new Set(refs.map((r) => `${keyString(r)}#${r.attempt}`));
  const bySample = new Map<string, AttemptRef[]>();
  for (const ref of refs) bySample.set(ref.sampleId, [...(bySample.get(ref.sampleId) ?? []), ref]);
  const units: RescoreUnit[] = [];
  for (const sampleId of bySample.keys()) {
    for (const attempt of await store.reads.listAttempts(runId, { sampleId })) {
      if (!wanted.has(`${keyString(attempt)}#${attempt.attempt}`)) continue;
      units.push({
        key: { sampleId, epoch: attempt.epoch },
        attempt: attempt.attempt,
        record: records.get(sampleId)!,
        output: attempt.output,
        current: attempt.scores,
        rerun,
        usage: attempt.usage,
        failed: attempt.status === "error",
      });
    }
  }
  return units;
}

/**
 * The scorer errors a resume from the snapshot's pages scores again (`pagedResume`), as
 * `rescoreUnits` makes them, found a page of the snapshot at a time (`plannedPages`' `toRescore`,
 * the plan of the whole run's for those samples) as the pool takes them: no list of them, their
 * samples or the run's attempts is held.
 *
 * @example exec.rescore = { units: pagedRescoreUnits(store, run, { inflight }), pass };
 */
export async function* pagedRescoreUnits(
  store: Store,
  run: Run,
  resume: SnapshotResume,
  rerun: ReadonlySet<string> = new Set(),
): AsyncIterable<RescoreUnit> {
  for await (const { records, plan } of plannedPages(store, run.id, run.config.epochs, resume)) {
    if (plan.toRescore.length === 0) continue;
    yield* await rescoreUnits(store, run.id, plan.toRescore, records, rerun);
  }
}
