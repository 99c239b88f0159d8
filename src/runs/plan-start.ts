import type { NotReused } from "../core/reuse-plan.js";
import type { Store } from "../store/types.js";
import { evalIdentity } from "./eval-identity.js";
import { planReuseFrom } from "./reuse-run.js";
import { runSecrets } from "./run-secrets.js";
import type { RunDefinition } from "./start-run.js";

/** What `stet plan` says a run would do: deterministic for the same store and files. */
export interface StartPlan {
  evalName: string;
  /** Keys of the run: samples × epochs. */
  keys: number;
  /** What was asked (`--reuse`, or the eval's `reuse`), and the run it resolves to. */
  requested: string | null;
  source: string | null;
  /** Keys whose outcome would be reused; of them, outputs scored again by new scorers. */
  reused: number;
  rescored: number;
  /** Keys that would execute. */
  execute: number;
  /** The keys not reused, grouped by why, most first. */
  notReused: NotReused[];
  /** The source run's mean cost per key, and that times the keys to execute (null: unknown). */
  meanCostUsd: number | null;
  expectedSpendUsd: number | null;
}

/**
 * What a run of `definition` would reuse, score again and execute, and why each key would not be
 * reused, without recording anything (see `planReuseFrom`).
 *
 * @example const plan = await planStart(store, await prepareStart({ eval: "qa.ts", reuse: "latest" }));
 */
export async function planStart(store: Store, definition: RunDefinition): Promise<StartPlan> {
  const ev = definition.eval;
  const keys = ev.samples.length * ev.epochs;
  const base = { evalName: ev.name, keys };
  if (definition.reuse === undefined) {
    return {
      ...base,
      requested: null,
      source: null,
      reused: 0,
      rescored: 0,
      execute: keys,
      notReused: keys > 0 ? [{ reason: "no --reuse asked", keys }] : [],
      meanCostUsd: null,
      expectedSpendUsd: null,
    };
  }
  const identity = evalIdentity(
    { ...ev, epochs: definition.declaredEpochs ?? ev.epochs },
    definition.evalPath,
    runSecrets(store),
  );
  const planned = await planReuseFrom(store, {
    from: definition.reuse,
    eval: ev,
    identity,
    model: definition.model,
  });
  const execute = keys - planned.reused;
  return {
    ...base,
    requested: planned.requested,
    source: planned.source,
    reused: planned.reused,
    rescored: planned.rescored,
    execute,
    notReused: planned.notReused,
    // Rounded (to a billionth, and a millionth): float sums print as noise otherwise.
    meanCostUsd: planned.meanCostUsd === null ? null : Math.round(planned.meanCostUsd * 1e9) / 1e9,
    expectedSpendUsd:
      planned.meanCostUsd === null ? null : Math.round(planned.meanCostUsd * execute * 1e6) / 1e6,
  };
}
