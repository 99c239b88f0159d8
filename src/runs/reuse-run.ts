import { StetError } from "../core/errors.js";
import type { EngineEval, PagedSamples } from "../core/eval.js";
import {
  planReuse,
  ReuseSource,
  ReuseTally,
  reusedDraft,
  type ReusePlan,
  type ReusePlanInput,
} from "../core/reuse-plan.js";
import type { AttemptFacts } from "../core/plan.js";
import { runModel } from "../core/run-model.js";
import type { Attempt, Run, RunIdentity } from "../core/types.js";
import { keyString } from "../core/keys.js";
import type { KeyList } from "../core/key-list.js";
import type { AttemptFact, StepDraft, Store } from "../store/types.js";
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
  /**
   * Whether to find the source's mean cost per key (`PlannedReuse.meanCostUsd`, what `stet plan`
   * prints); a dataset read a page at a time reads the source's attempts once more for it.
   */
  meanCost?: boolean;
}

/**
 * Plans reusing an earlier run's outcomes in a new run (see `planReuse`): finds the source
 * (`latest`: the newest run of the eval's name whose eval and model match, complete or not),
 * compares its identity with the new run's (a changed solver or model, a changed helper module,
 * reuses nothing; changed scorers reuse the outputs and score them again) and reads its
 * snapshot's fingerprints and its attempts' facts (`attemptFactPages`), folding a page at a time:
 * no score, output, transcript or journal is read until `seedReused` copies them. A run id that
 * does not exist is refused (`E_RUN_NOT_FOUND`).
 *
 * @example const plan = await planReuseFrom(store, { from: "latest", eval: ev, identity });
 */
export interface PlannedReuse extends ReusePlan {
  /** The new run's scorers and those to score again: what `reusedDraft` is told. */
  scorers: string[];
  rescore: string[];
  /**
   * What a key cost the source run, on average: its executed attempts' known cost over the keys
   * they ran (null unless `meanCost` was asked, without a source, or when no cost is known).
   */
  meanCostUsd: number | null;
}

export async function planReuseFrom(store: Store, request: ReuseRequest): Promise<PlannedReuse> {
  const source = await findSource(store, request);
  const scorers = request.eval.scorers.map((s) => s.name);
  const recorded = source.run?.config.identity;
  const rescore = recorded ? changedScorers(recorded.scorers, request.identity.scorers) : [];
  const blockers = source.run ? identityBlockers(source.run, request) : [source.why];
  // The source's rows are read only when something of it may be reused.
  const from = blockers.length === 0 ? source.run?.id : undefined;
  const { samples, epochs, pages } = request.eval;
  const base = { requested: request.from, source: source.run?.id ?? null, blockers, scorers };
  const input = { ...base, epochs, rescore: source.run ? rescore : [] };
  const cost = request.meanCost ? new MeanCost() : undefined;
  const planned = (plan: ReusePlan) => ({
    ...plan,
    scorers,
    rescore: input.rescore,
    meanCostUsd: cost?.mean() ?? null,
  });
  if (pages) return planned(await pagedReusePlan(store, from, input, pages, cost));
  const folded = new ReuseSource(samples, epochs);
  if (from) {
    // Each page is folded and let go: the source's attempts are never held all at once.
    for await (const page of store.reads.attemptFactPages(from)) {
      folded.addAttempts(page);
      cost?.add(page);
    }
    await foldSnapshot(store, from, folded);
  }
  return planned(planReuse({ ...input, samples, folded }));
}

/**
 * `planReuse` of a paged dataset (`EngineEval.pages`, a run created from the file's pages), a
 * page of the file at a time: each page's samples looked up in the source by id
 * (`reads.sampleHeads`: their snapshot fingerprints and attempt heads; the source's records of
 * those that changed, to name the fields), planned, counted and let go. No list of the keys to
 * reuse is kept (`origins` is empty): `seedReusedPages` finds them again in the store.
 */
async function pagedReusePlan(
  store: Store,
  from: string | undefined,
  input: Omit<ReusePlanInput, "samples" | "folded">,
  pages: PagedSamples,
  cost: MeanCost | undefined,
): Promise<ReusePlan> {
  if (from && cost) for await (const page of store.reads.attemptFactPages(from)) cost.add(page);
  const tally = new ReuseTally();
  for await (const samples of pages.read()) {
    const folded = new ReuseSource(samples, input.epochs);
    if (from) {
      const { fingerprints, heads } = await store.reads.sampleHeads(
        from,
        samples.map((r) => r.sample.id),
      );
      folded.addSnapshot(fingerprints);
      folded.addAttempts(heads);
      const changed = folded.changedIds();
      if (changed.length > 0) folded.addChanged(await store.reads.sampleRecordsOf(from, changed));
    }
    tally.add(planReuse({ ...input, samples, folded }));
  }
  return { ...tally.summary(input.source, input.requested), origins: [] };
}

/**
 * Folds the source's snapshot into `folded`, a page at a time: every sample's fingerprint, and
 * the samples themselves only when some sample of the new run changed (the reason names the
 * fields that did). Without a changed sample no sample's content is read.
 */
async function foldSnapshot(store: Store, runId: string, folded: ReuseSource): Promise<void> {
  for await (const page of store.reads.sampleFingerprintPages(runId)) folded.addSnapshot(page);
  if (!folded.anyChanged()) return;
  for await (const page of store.reads.samplePages(runId)) folded.addChanged(page);
}

/**
 * What a key cost the source run, on average: its executed attempts' known cost over the keys
 * they ran, folded over its attempts in key order (a key's attempts come one after another).
 */
class MeanCost {
  private total = 0;
  private keys = 0;
  private last = "";

  add(attempts: readonly AttemptFact[]): void {
    for (const a of attempts) {
      if (!a.executed || a.costUsd === null) continue;
      this.total += a.costUsd;
      const key = keyString(a);
      if (key !== this.last) this.keys++;
      this.last = key;
    }
  }

  mean(): number | null {
    return this.keys === 0 ? null : this.total / this.keys;
  }
}

/** The reuse a new run asked for (`options.reuse`), planned before the run is recorded. */
export async function startReuse(
  options: Pick<ReuseRequest, "eval" | "model"> & {
    store: Store;
    reuse?: string;
    seed?: unknown[];
  },
  identity: RunIdentity,
  distributed: boolean,
) {
  if (options.reuse === undefined) return undefined;
  if (distributed || options.seed?.length) {
    throw new StetError(
      "E_USAGE",
      `--reuse cannot be used with ${distributed ? "--distributed" : "--resume-from"}: start the run with one of them`,
    );
  }
  const plan = await planReuseFrom(options.store, {
    from: options.reuse,
    eval: options.eval,
    identity,
    model: options.model,
  });
  const { source, requested, reused, rescored, notReused } = plan;
  return { plan, summary: { source, requested, reused, rescored, notReused } };
}

/**
 * Records the attempts a plan reuses in the new run, with their step journals, a page of the
 * source's attempts at a time (each page, its attempts and their journal entries, in one
 * transaction): the source's outputs, transcripts and journal are never held whole. Returns the
 * recorded attempts' facts, what the new run's plan is made from: not their heads, which at
 * 100,000 reused keys held ~40 MB for the whole run.
 */
export async function seedReused(
  store: Store,
  runId: string,
  token: string,
  plan: PlannedReuse,
): Promise<AttemptFacts[]> {
  if (plan.source === null || plan.origins.length === 0) return [];
  const wanted = new Set(plan.origins.map((o) => `${keyString(o)}#${o.attempt}`));
  const seeded: AttemptFacts[] = [];
  for await (const page of store.reads.attemptPages(plan.source)) {
    const picked = page.filter((a) => wanted.has(`${keyString(a)}#${a.attempt}`));
    for (const a of await recordReused(store, runId, token, plan, picked)) {
      const { sampleId, epoch, attempt, status, fingerprint, error } = a;
      seeded.push({ sampleId, epoch, attempt, status, fingerprint, error });
    }
  }
  return seeded;
}

/** Records picked source attempts in the new run, with their journal entries, in one transaction. */
export async function recordReused(
  store: Store,
  runId: string,
  token: string,
  plan: PlannedReuse,
  picked: readonly Attempt[],
): Promise<Attempt[]> {
  if (picked.length === 0 || plan.source === null) return [];
  const wanted = new Set(picked.map((a) => `${keyString(a)}#${a.attempt}`));
  const drafts = picked.map((a) => reusedDraft(a, plan));
  const steps = await reusedSteps(store, plan.source, picked, wanted);
  const extras = steps.length > 0 ? { steps: { drafts: steps, discard: [] } } : undefined;
  return store.attempts.record(runId, token, drafts, extras);
}

/**
 * Records in the run's configuration that every key its reuse picked is stored
 * (`RecordedReuse.seeded`), so that a resume need not plan what a cut-short seed owes
 * (`mayOweReuse`) and may plan a page at a time. Returns the run as recorded.
 */
export async function markSeeded(store: Store, run: Run, token: string): Promise<Run> {
  const reuse = run.config.reuse;
  if (!reuse || reuse.seeded) return run;
  const config = { ...run.config, reuse: { ...reuse, seeded: true as const } };
  if (!(await store.runs.updateConfig(run.id, token, config))) {
    throw new StetError(
      "E_FENCED",
      `run ${run.id} was taken over while its reused keys were stored`,
    );
  }
  return { ...run, config };
}

/** The journal entries of a page of picked source attempts, as steps of the new run's keys. */
async function reusedSteps(
  store: Store,
  sourceId: string,
  picked: readonly Attempt[],
  wanted: ReadonlySet<string>,
): Promise<StepDraft[]> {
  // A page is in key order: its first and last sample ids bound its keys' journal entries.
  const entries = await store.journal.list(sourceId, {
    fromSampleId: picked[0]!.sampleId,
    toSampleId: picked[picked.length - 1]!.sampleId,
  });
  const steps: StepDraft[] = [];
  for (const entry of entries) {
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

/**
 * The reuse a resume still owes a run started with `--reuse`: seeding commits a page of the
 * source at a time, so a kill during it leaves the run with only some of its reused keys. The
 * keys never tried since (no attempt in this run) that the same source still covers, planned as
 * at the start against the run's recorded identity: `claimResume` seeds them before anything
 * executes, so nothing the source paid for is bought again. Null when nothing is owed.
 */
export async function owedReuse(
  store: Store,
  run: Run,
  ev: Pick<EngineEval, "samples" | "scorers">,
  untried: Pick<KeyList, "length" | "map">,
): Promise<PlannedReuse | null> {
  const source = run.config.reuse?.source;
  const identity = run.config.identity;
  if (!source || !identity || untried.length === 0) return null;
  const plan = await planReuseFrom(store, {
    from: source,
    eval: { ...ev, epochs: run.config.epochs } as EngineEval,
    identity,
    model: run.config.model,
  });
  const owed = new Set(untried.map((key) => keyString(key)));
  const origins = plan.origins.filter((o) => owed.has(keyString(o)));
  return origins.length === 0 ? null : { ...plan, origins };
}
