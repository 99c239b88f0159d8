import { checkBound } from "../core/bounds.js";
import type { Run } from "../core/types.js";
import type { SpendCap } from "../engine/budget.js";

/**
 * The cap a resume executes under: `override` (its `--max-cost`) when given, else the one the
 * run was started with; none when neither is set. The cap is on the run's total: what its stored
 * executed attempts and scorings cost, which the engine reads from the store as it dispatches
 * (imported attempts were paid for elsewhere).
 *
 * @example resumeCap(run, 2) // { maxCostUsd: 2 }
 */
export function resumeCap(run: Run, override: number | undefined): SpendCap | undefined {
  if (override !== undefined) checkBound("maxCost", override, "maxCost", "E_CONFIG");
  const maxCostUsd = override ?? run.config.maxCostUsd;
  return maxCostUsd === undefined ? undefined : { maxCostUsd };
}
