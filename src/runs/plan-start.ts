import { stat } from "node:fs/promises";
import type { PagedSamples } from "../core/eval.js";
import type { NotReused } from "../core/reuse-plan.js";
import { SeenIds } from "../core/seen-ids.js";
import type { SampleRecord } from "../core/types.js";
import type { Store } from "../store/types.js";
import { evalIdentity } from "./eval-identity.js";
import { wholeEval } from "./paged-eval.js";
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
  const { pages } = definition.eval;
  if (!pages) return planOf(store, definition);
  // A paged dataset is read a page at a time; one that may repeat an id is loaded whole, which
  // refuses a repeat as `stet run` would, naming both rows.
  const checked = { ...pages, read: () => unrepeated(pages) };
  try {
    return await planOf(store, { ...definition, eval: { ...definition.eval, pages: checked } });
  } catch (error) {
    if (error !== MAY_REPEAT) throw error;
    return planOf(store, { ...definition, eval: await wholeEval(definition.eval) });
  }
}

/** What `unrepeated` throws at an id the pages may have given before. */
const MAY_REPEAT = new Error("a sample id may repeat");

/** The pages as they come, until an id that may have come before (`SeenIds`): then MAY_REPEAT. */
async function* unrepeated(pages: PagedSamples): AsyncGenerator<SampleRecord[]> {
  // Sized for the most rows the file could hold (a JSONL row of a sample is 16 bytes and up).
  const seen = new SeenIds((await stat(pages.file)).size / 16);
  for await (const page of pages.read()) {
    if (page.some((r) => seen.add(r.sample.id))) throw MAY_REPEAT;
    yield page;
  }
}

async function planOf(store: Store, definition: RunDefinition): Promise<StartPlan> {
  const ev = definition.eval;
  const { pages } = ev;
  if (definition.reuse === undefined) {
    const keys = (pages ? await countSamples(pages) : ev.samples.length) * ev.epochs;
    return {
      evalName: ev.name,
      keys,
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
    meanCost: true,
  });
  // Every key is reused or counted under why not (a paged dataset's keys are counted so).
  const keys = planned.reused + planned.notReused.reduce((sum, r) => sum + r.keys, 0);
  const execute = keys - planned.reused;
  return {
    evalName: ev.name,
    keys,
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

async function countSamples(pages: PagedSamples): Promise<number> {
  let count = 0;
  for await (const page of pages.read()) count += page.length;
  return count;
}
