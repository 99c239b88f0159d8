import { planStart, type StartPlan } from "../../runs/plan-start.js";
import { PAGED_DATASET_BYTES, prepareStart } from "../../runs/start-run.js";
import { EXIT } from "../exit-codes.js";
import { createIo } from "../io.js";
import { openStore, storeLocation } from "../open-store.js";
import { formatCount } from "../render/format.js";
import { renderReuse } from "../render/summary.js";

export interface PlanFlags {
  reuse?: string;
  model?: string;
  epochs?: number;
  limit?: number;
  loadTimeout?: number;
  store?: string;
  json?: boolean;
}

/**
 * `stet plan <eval> [--reuse …]`: loads the eval as `stet run` would and says what a run would
 * reuse (from where), score again and execute, with why each other key would not be reused and
 * the expected spend; records nothing. `--json` prints the same, deterministic for the same store
 * and files.
 */
export async function planCommand(target: string, flags: PlanFlags): Promise<number> {
  const io = createIo(flags.json ?? false);
  storeLocation(flags.store);
  const prepared = await prepareStart({
    eval: target,
    ...(flags.model === undefined ? {} : { model: flags.model }),
    ...(flags.epochs === undefined ? {} : { epochs: flags.epochs }),
    ...(flags.limit === undefined ? {} : { limit: flags.limit }),
    ...(flags.loadTimeout === undefined ? {} : { loadTimeoutMs: flags.loadTimeout }),
    ...(flags.reuse === undefined ? {} : { reuse: flags.reuse }),
    // A large dataset file is planned a page at a time, as `stet run` executes it.
    paged: { minBytes: PAGED_DATASET_BYTES },
  });
  // Only read: a store that does not exist is refused, never made.
  const store = await openStore(flags.store, { create: false });
  try {
    const plan = await planStart(store, prepared);
    if (flags.json) io.stdout.write(`${JSON.stringify(plan, null, 2)}\n`);
    else io.say(renderStartPlan(plan));
    return EXIT.ok;
  } finally {
    await store.close();
  }
}

function renderStartPlan(plan: StartPlan): string {
  const lines = [`plan ${plan.evalName} · ${formatCount(plan.keys)} keys`];
  if (plan.requested !== null) lines.push(...renderReuse({ ...plan, requested: plan.requested }));
  const rescore =
    plan.rescored > 0
      ? ` · ${formatCount(plan.rescored)} reused outputs to score again (no solver call)`
      : "";
  const spend =
    plan.expectedSpendUsd === null
      ? ""
      : ` · expected spend $${plan.expectedSpendUsd.toFixed(2)} ($${plan.meanCostUsd!.toFixed(4)} per key in run ${plan.source})`;
  lines.push(`execute  ${formatCount(plan.execute)} keys${rescore}${spend}`);
  return lines.join("\n");
}
