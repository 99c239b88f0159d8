import type { PlanSummary } from "../core/events.js";
import { byteOrder, keyString } from "../core/keys.js";
import { outranks } from "../core/run-figures.js";
import type { Key, OutcomeAsk, RerunRequest } from "../core/types.js";
import type { AttemptHead, Store } from "../store/types.js";

/** How many requests (so at most how many samples) one read of their attempts covers. */
const SAMPLES_A_READ = 1_000;

/** Where a plan counts a key (the fields of a PlanSummary it adds one to). */
type KeyClass = "preserved" | "rescore" | "interrupted" | "errored" | "neverStarted" | "rerun";

/** A key's outcome as a plan classes it: its status, and whether its error is a scorer's. */
type Outcome = Pick<AttemptHead, "status" | "attempt"> & { scorerError: boolean };

/**
 * The plan `storedPlan` counted from the figures, corrected for the run's re-run requests as
 * `planRun` reads them: a requested key's attempts up to the one it follows are history, so until
 * it has a scored attempt after that one it is to execute (`rerun` when nothing came after, else
 * as its last later attempt says). Reads the requests a page at a time (`reads.rerunPages`) and
 * each page's keys' attempts (`reads.sampleHeads`): none of the run's other keys, nothing held
 * beyond a page.
 *
 * @example const plan = await withRerunRequests(store, run.id, counted, inflight);
 */
export async function withRerunRequests<Plan extends Counts>(
  store: Store,
  runId: string,
  counted: Plan,
  inflight: readonly Key[],
  /** `planRun`'s `rerunErrors` (default true): false keeps a re-run's error, the key preserved. */
  rerunErrors = true,
  /** A re-run asked now, not recorded yet: its keys are requested too (`plannedRequests`). */
  ask?: RerunAskNow,
): Promise<Plan> {
  const plan = { ...counted };
  const flying = new Set(inflight.map(keyString));
  // A request that is done counts where the figures count its key: only the open ones move.
  for await (const page of plannedRequests(store, runId, { open: true, ask })) {
    const ids = new Set(page.map((r) => r.sampleId));
    const { fingerprints, heads } = await store.reads.sampleHeads(runId, ids);
    const fingerprintOf = new Map(fingerprints.map((f) => [f.sampleId, f.fingerprint]));
    const attempts = new Map<string, AttemptHead[]>();
    for (const head of heads) {
      if (fingerprintOf.get(head.sampleId) !== head.fingerprint) continue;
      const k = keyString(head);
      const list = attempts.get(k);
      if (list) list.push(head);
      else attempts.set(k, [head]);
    }
    for (const request of page) {
      const k = keyString(request);
      const own = attempts.get(k) ?? [];
      const inFlight = flying.has(k);
      count(plan, storedClass(best(own), inFlight), -1);
      count(plan, requestedClass(own, request.after, inFlight, rerunErrors), 1);
    }
  }
  return plan;
}

/**
 * A re-run a resume asks now, before its claim records it (`RerunRecord`'s `asked`): `added`, the
 * keys of the sample ids it names (each after its key's last attempt), and the keys `outcomes`
 * names of the stored outcomes.
 */
export interface RerunAskNow {
  added: readonly RerunRequest[];
  outcomes: OutcomeAsk;
}

/**
 * The requests a plan reads, in key order, a page of at most `SAMPLES_A_READ` at a time: the
 * run's (`open`: those not done) and, with `ask`, the ones it asks, as the claim will record them
 * (a key asked and recorded once, after the later attempt). Nothing held beyond a page of each.
 */
export async function* plannedRequests(
  store: Store,
  runId: string,
  options: { open?: boolean; ask?: RerunAskNow | undefined } = {},
): AsyncIterable<RerunRequest[]> {
  const { open = false, ask } = options;
  const recorded = store.reads.rerunPages(runId, SAMPLES_A_READ, { open });
  if (!ask) {
    yield* recorded;
    return;
  }
  const sources = [requestsOf(recorded), requestsOf([sortedKeys(ask.added)])];
  const { failed, limited } = ask.outcomes;
  if (failed || limited) {
    sources.push(
      requestsOf(store.reads.rerunPages(runId, SAMPLES_A_READ, { asked: ask.outcomes })),
    );
  }
  let page: RerunRequest[] = [];
  for await (const request of mergedKeys(sources)) {
    page.push(request);
    if (page.length === SAMPLES_A_READ) {
      yield page;
      page = [];
    }
  }
  if (page.length > 0) yield page;
}

/** Key order: sample ids by their bytes (the store's), then epochs. */
const keyOrder = (a: Key, b: Key) => byteOrder(a.sampleId, b.sampleId) || a.epoch - b.epoch;

function sortedKeys(requests: readonly RerunRequest[]): RerunRequest[] {
  return [...requests].sort(keyOrder);
}

async function* requestsOf(
  pages: AsyncIterable<RerunRequest[]> | Iterable<RerunRequest[]>,
): AsyncGenerator<RerunRequest, void, undefined> {
  for await (const page of pages) yield* page;
}

/** Streams in key order merged into one, a key in several once, after the latest `after`. */
async function* mergedKeys(
  streams: AsyncGenerator<RerunRequest, void, undefined>[],
): AsyncGenerator<RerunRequest, void, undefined> {
  const heads = await Promise.all(streams.map((s) => s.next()));
  for (;;) {
    let least: RerunRequest | undefined;
    for (const head of heads) {
      if (head.done) continue;
      if (!least || keyOrder(head.value, least) < 0) least = head.value;
    }
    if (!least) return;
    let after = least.after;
    for (let i = 0; i < heads.length; i++) {
      const head = heads[i]!;
      if (head.done || keyOrder(head.value, least) !== 0) continue;
      after = Math.max(after, head.value.after);
      heads[i] = await streams[i]!.next();
    }
    yield { sampleId: least.sampleId, epoch: least.epoch, after };
  }
}

/**
 * Every re-run request of the run, in key order: what a plan of the whole run reads (its memory
 * grows with the requests, as the plan's own does).
 */
export async function recordedReruns(store: Store, runId: string): Promise<RerunRequest[]> {
  const all: RerunRequest[] = [];
  for await (const page of store.reads.rerunPages(runId)) all.push(...page);
  return all;
}

/** The key's outcome as the figures keep it: a scored attempt over an error, then the latest. */
function best(attempts: readonly AttemptHead[]): Outcome | undefined {
  let held: AttemptHead | undefined;
  for (const a of attempts) if (outranks(a, held)) held = a;
  return held && outcome(held);
}

/** Where `storedPlan` counts a key of this outcome. */
function storedClass(held: Outcome | undefined, inFlight: boolean): KeyClass {
  if (held?.status === "scored") return "preserved";
  if (inFlight) return "interrupted";
  if (held) return held.scorerError ? "rescore" : "errored";
  return "neverStarted";
}

/**
 * Where `planRun` counts a key asked to re-run after attempt `after`: by its attempts after that
 * one (the first scored, else the last), in the order the store keeps them.
 */
function requestedClass(
  attempts: readonly AttemptHead[],
  after: number,
  inFlight: boolean,
  rerunErrors: boolean,
): KeyClass {
  let latest: AttemptHead | undefined;
  for (const a of attempts) {
    if (a.attempt <= after || latest?.status === "scored") continue;
    latest = a;
  }
  if (latest?.status === "scored") return "preserved";
  if (!latest) return "rerun";
  if (inFlight) return "interrupted";
  // A re-run that errored leaves the key's earlier scored attempt as its outcome.
  if (!rerunErrors) return "preserved";
  return outcome(latest).scorerError ? "rescore" : "errored";
}

function outcome(a: AttemptHead): Outcome {
  return { status: a.status, attempt: a.attempt, scorerError: a.error?.type === "scorer" };
}

/** The counts of a plan this corrects (a `PlanSummary`'s, a paged resume's). */
type Counts = Pick<
  PlanSummary,
  "preserved" | "toExecute" | "toRescore" | "interrupted" | "errored" | "neverStarted" | "rerun"
>;

function count(plan: Counts, where: KeyClass, sign: 1 | -1): void {
  if (where === "preserved") plan.preserved += sign;
  else if (where === "rescore") plan.toRescore += sign;
  else {
    plan.toExecute += sign;
    plan[where] += sign;
  }
}
