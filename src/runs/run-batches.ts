import {
  batchSettings,
  summarizeBatches,
  type BatchOptions,
  type RunBatches,
} from "../core/batch.js";
import type { Store } from "../store/types.js";
import type { ResumeEval } from "./resume-run.js";

/**
 * The provider batches of each run (`summarizeBatches`), by run id; a run that never batched is
 * absent. One small indexed read per run: listings page their runs.
 *
 * @example (await runBatches(store, ["r_abc"])).get("r_abc")?.waiting // 1
 */
export async function runBatches(
  store: Store,
  runIds: readonly string[],
): Promise<Map<string, RunBatches>> {
  const now = Date.now();
  const lists = await Promise.all(runIds.map((id) => store.batches.list(id)));
  const byRun = new Map<string, RunBatches>();
  for (const [i, submissions] of lists.entries()) {
    const summary = summarizeBatches(submissions, now);
    if (summary) byRun.set(runIds[i]!, summary);
  }
  return byRun;
}

/**
 * A resume's batches: the eval's (or `--batch`), and always those of a run that has submissions
 * (an execution before this one batched): its keys adopt them instead of being bought again.
 *
 * @example if (!(await resumeBatch(store, run.id, resume.eval)).batch) refuseDetach();
 */
export async function resumeBatch(
  store: Store,
  runId: string,
  ev: ResumeEval,
): Promise<{ batch?: Required<BatchOptions> }> {
  if (ev.batch) return { batch: ev.batch };
  const submitted = (await store.batches.list(runId)).length > 0;
  return submitted && ev.solver.batchable ? { batch: batchSettings(true) } : {};
}
