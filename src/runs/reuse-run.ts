import { StetError } from "../core/errors.js";
import type { EngineEval } from "../core/eval.js";
import { planReuse, type ReusePlan } from "../core/reuse-plan.js";
import { runModel } from "../core/run-model.js";
import type { Attempt, Run, RunIdentity } from "../core/types.js";
import { keyString } from "../core/keys.js";
import type { StepDraft, Store } from "../store/types.js";
import { changedScorers, compareIdentity, describeDifference } from "./run-identity.js";

/** What `--reuse` (or `reuse` in `defineEval`, or the API's body) asks: a run id, or `latest`. */
export interface ReuseRequest {
  /** A run id, or `latest`: the newest run of the same eval whose identity matches. */
  from: string;
  eval: EngineEval;
  /** The identity the new run records. */
  identity: RunIdentity;
  /** The `--model` override of the new run. */
  model?: string | undefined;
}

/**
 * Plans reusing an earlier run's outcomes in a new run (see `planReuse`): finds the source
 * (`latest`: the newest run of the eval's name whose eval and model match, complete or not),
 * compares its identity with the new run's (a changed solver or model, a changed helper module,
 * reuses nothing; changed scorers reuse the outputs and score them again) and reads its
 * snapshot and attempts. A run id that does not exist is refused (`E_RUN_NOT_FOUND`).
 *
 * @example const plan = await planReuseFrom(store, { from: "latest", eval: ev, identity });
 */
export interface PlannedReuse extends ReusePlan {
  /** The reused attempts' step journals (their trajectories), to record with them. */
  steps: StepDraft[];
  /**
   * What a key cost the source run, on average: its executed attempts' known cost over the keys
   * they ran (null without a source, or when no cost is known).
   */
  meanCostUsd: number | null;
}

export async function planReuseFrom(store: Store, request: ReuseRequest): Promise<PlannedReuse> {
  const source = await findSource(store, request);
  const base = {
    requested: request.from,
    samples: request.eval.samples,
    epochs: request.eval.epochs,
    scorers: request.eval.scorers.map((s) => s.name),
  };
  if (!source.run) {
    const plan = planReuse({
      ...base,
      source: null,
      blockers: [source.why],
      sourceSamples: [],
      sourceAttempts: [],
      rescore: [],
    });
    return { ...plan, steps: [], meanCostUsd: null };
  }
  const blockers = identityBlockers(source.run, request);
  const recorded = source.run.config.identity;
  const [sourceSamples, sourceAttempts] =
    blockers.length > 0
      ? [[], []]
      : await Promise.all([
          store.reads.getSamples(source.run.id),
          store.reads.listAttempts(source.run.id),
        ]);
  const plan = planReuse({
    ...base,
    source: source.run.id,
    blockers,
    sourceSamples,
    sourceAttempts,
    rescore: recorded ? changedScorers(recorded.scorers, request.identity.scorers) : [],
  });
  return {
    ...plan,
    steps: await reusedSteps(store, source.run.id, plan),
    meanCostUsd: meanCost(sourceAttempts),
  };
}

function meanCost(attempts: readonly Attempt[]): number | null {
  const keys = new Set<string>();
  let total = 0;
  for (const a of attempts) {
    if (a.provenance.kind !== "executed" || a.usage?.costUsd === undefined) continue;
    total += a.usage.costUsd;
    keys.add(keyString(a));
  }
  return keys.size === 0 ? null : total / keys.size;
}

/** The journal entries of the source attempts a plan reuses, as steps of the new run's keys. */
async function reusedSteps(store: Store, sourceId: string, plan: ReusePlan): Promise<StepDraft[]> {
  if (plan.origins.length === 0) return [];
  const wanted = new Set(plan.origins.map((o) => `${keyString(o)}#${o.attempt}`));
  const steps: StepDraft[] = [];
  for (const entry of await store.journal.list(sourceId)) {
    if (entry.attempt === null || !wanted.has(`${keyString(entry)}#${entry.attempt}`)) continue;
    const { runId: _run, attempt: _attempt, ...step } = entry;
    steps.push(step);
  }
  return steps;
}

type Found = { run: Run; why?: undefined } | { run?: undefined; why: string };

async function findSource(store: Store, request: ReuseRequest): Promise<Found> {
  if (request.from !== "latest") {
    const run = await store.runs.get(request.from);
    if (run) return { run };
    throw new StetError(
      "E_RUN_NOT_FOUND",
      `--reuse ${request.from}: no run ${JSON.stringify(request.from)} in this store (give a run id, or latest)`,
      { details: { runId: request.from } },
    );
  }
  const name = request.identity.evalName;
  const listings = await store.reads.listRuns({ evalName: name });
  for (const { run } of listings) {
    if (identityBlockers(run, request).length === 0) return { run };
  }
  const newest = listings[0]?.run;
  if (!newest) return { why: `no earlier run of eval ${JSON.stringify(name)}` };
  const differences = identityBlockers(newest, request);
  return {
    why: `no earlier run with this eval's identity (newest, ${newest.id}: ${differences.join("; ")})`,
  };
}

/**
 * What makes `run`'s outcomes not this eval's, one line each: another eval's name, solver (its
 * model, parameters, tools, endpoint, a function's source and local modules), or `--model`.
 * Scorers are not among them: their outputs are reused and scored again.
 */
function identityBlockers(run: Run, request: ReuseRequest): string[] {
  const recorded = run.config.identity;
  if (run.evalName !== request.identity.evalName) {
    return [
      describeDifference({
        field: "evalName",
        recorded: run.evalName,
        current: request.identity.evalName,
      }),
    ];
  }
  if (!recorded) return [`run ${run.id} recorded no identity (made by an older stet)`];
  const differences = compareIdentity(recorded, request.identity)
    .differences.filter((d) => d.kind === "eval")
    .map(describeDifference);
  const was = runModel(run.config);
  const now = runModel({
    identity: request.identity,
    solver: request.identity.solver,
    ...(request.model === undefined ? {} : { model: request.model }),
  });
  const modelShown = differences.some((d) => d.startsWith("solver.model:"));
  if (!modelShown && (was ?? null) !== (now ?? null)) {
    differences.push(
      describeDifference({ field: "solver.model", recorded: was ?? null, current: now ?? null }),
    );
  }
  return differences;
}
