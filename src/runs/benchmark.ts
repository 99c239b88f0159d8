import { randomBytes } from "node:crypto";
import type { Run } from "../core/types.js";
import type { Store } from "../store/types.js";

/**
 * A new benchmark id: what `stet run --model a --model b` records on each of its runs
 * (`RunConfig.benchmark`), so `stet resume <id>` finds them again. Membership is a field of each
 * run, never a list kept elsewhere.
 *
 * @example newBenchmarkId() // "b_q8zk2mxa0c"
 */
export function newBenchmarkId(): string {
  return `b_${randomBytes(8).toString("base64url").replace(/[-_]/g, "x").slice(0, 10).toLowerCase()}`;
}

/**
 * `total` slots shared by `parts` runs executing at once: as even as it goes, the first runs
 * taking the remainder, and at least one each (so the sum exceeds `total` only when
 * `parts > total`).
 *
 * @example splitConcurrency(10, 3) // [4, 3, 3]
 */
export function splitConcurrency(total: number, parts: number): number[] {
  return Array.from({ length: parts }, (_, i) =>
    Math.max(1, Math.floor(total / parts) + (i < total % parts ? 1 : 0)),
  );
}

/**
 * The runs of a benchmark, oldest first (the order its command named the models in).
 *
 * @example const runs = await benchmarkRuns(store, "b_q8zk2mxa0c");
 */
export async function benchmarkRuns(store: Store, benchmarkId: string): Promise<Run[]> {
  const listed = await store.reads.listRuns();
  return listed
    .map((l) => l.run)
    .filter((run) => run.config.benchmark === benchmarkId)
    .sort((a, b) => (a.createdAt < b.createdAt ? -1 : a.createdAt > b.createdAt ? 1 : 0));
}
