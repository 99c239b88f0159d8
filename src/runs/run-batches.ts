import { summarizeBatches, type RunBatches } from "../core/batch.js";
import type { Store } from "../store/types.js";

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
