import type { Store } from "../store/types.js";

/**
 * The distributed runs a worker may join: running, with keys left, oldest first.
 *
 * @example await openDistributedRuns(store) // ["r_abc", "r_def"]
 */
export async function openDistributedRuns(store: Store): Promise<string[]> {
  const running = await store.reads.listRuns({ status: "running" });
  return running
    .filter(({ run, counts }) => run.config.distributed === true && counts.remaining > 0)
    .sort((a, b) => a.run.createdAt.localeCompare(b.run.createdAt))
    .map(({ run }) => run.id);
}
