import { checkBound } from "../core/bounds.js";
import type { Run } from "../core/types.js";
import type { SpendCap } from "../engine/budget.js";
import type { AttemptHead, Store } from "../store/types.js";

/**
 * The cap of a new run: it has spent nothing (a seed's attempts are imported, paid for elsewhere).
 *
 * @example startingCap(0.5) // { maxCostUsd: 0.5, before: { costUsd: 0, priced: 0 } }
 */
export function startingCap(maxCostUsd: number): SpendCap {
  return { maxCostUsd, before: { costUsd: 0, priced: 0 } };
}

/**
 * The cap a resume executes under: `override` (its `--max-cost`) when given, else the one the
 * run was started with; none when neither is set. The cap is on the run's total, so what its
 * stored attempts spent counts: the executed ones, as `usage.totalSpent` counts them (imported
 * attempts were paid for elsewhere), and so does what its scorings' judges spent.
 *
 * @example await resumeCap(store, run, planned.attempts, 2) // { maxCostUsd: 2, before: { costUsd: 0.51, priced: 51 } }
 */
export async function resumeCap(
  store: Pick<Store, "listScorings">,
  run: Run,
  attempts: readonly AttemptHead[],
  override: number | undefined,
): Promise<SpendCap | undefined> {
  if (override !== undefined) checkBound("maxCost", override, "maxCost", "E_CONFIG");
  const maxCostUsd = override ?? run.config.maxCostUsd;
  if (maxCostUsd === undefined) return undefined;
  let costUsd = 0;
  let priced = 0;
  for (const attempt of attempts) {
    const cost = attempt.usage?.costUsd;
    if (attempt.provenance.kind !== "executed" || typeof cost !== "number") continue;
    costUsd += cost;
    priced++;
  }
  for (const scoring of await store.listScorings(run.id)) costUsd += scoring.usage?.costUsd ?? 0;
  return { maxCostUsd, before: { costUsd, priced } };
}
