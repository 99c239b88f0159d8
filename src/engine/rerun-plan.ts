import type { PlanSummary } from "../core/events.js";
import { byteOrder, keyString } from "../core/keys.js";
import { outranks } from "../core/run-figures.js";
import type { Key, OutcomeAsk, RerunRequest } from "../core/types.js";
import type { AttemptHead, RerunFact, Store } from "../store/types.js";

/** How many requests (so at most how many samples) one read of their attempts covers. */
const SAMPLES_A_READ = 1_000;

/** Where a plan counts a key (the fields of a PlanSummary it adds one to). */
type KeyClass = "preserved" | "rescore" | "interrupted" | "errored" | "neverStarted" | "rerun";

/** A request's latest attempt after the one it follows, as `requestedClass` reads it. */
type Later = RerunFact["later"] | "scored";

/**
 * The plan `storedPlan` counted from the figures, corrected for the run's re-run requests as
 * `planRun` reads them: a requested key's attempts up to the one it follows are history, so until
 * it has a scored attempt after that one it is to execute (`rerun` when nothing came after, else
 * as its last later attempt says). A request that is done counts where the figures count its key:
 * only the open ones move, read as one count of each kind (`reads.rerunFacts`). With `ask` (a
 * re-run asked now, not recorded yet) the requests are read a page at a time instead
 * (`plannedRequests`), each page's keys' attempts beside them (`reads.sampleHeads`): nothing held
 * beyond a page.
 *
 * @example const plan = await withRerunRequests(store, run.id, counted, inflight);
 */
export async function withRerunRequests<Plan extends Counts>(
  store: Store,
  runId: string,
  counted: Plan,
  /** The keys in flight (the store's, as `rerunFacts` reads them): used with `ask` only. */
  inflight: readonly Key[],
  /** `planRun`'s `rerunErrors` (default true): false keeps a re-run's error, the key preserved. */
  rerunErrors = true,
  /** A re-run asked now, not recorded yet: its keys are requested too (`plannedRequests`). */
  ask?: RerunAskNow,
): Promise<Plan> {
  const plan = { ...counted };
  if (!ask) {
    for (const fact of await store.reads.rerunFacts(runId)) move(plan, fact, rerunErrors);
    return plan;
  }
  const flying = new Set(inflight.map(keyString));
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
      move(plan, factOf(attempts.get(k) ?? [], request.after, flying.has(k)), rerunErrors);
    }
  }
  return plan;
}

/** Moves a fact's keys from where `storedPlan` counted them to where `planRun` does. */
function move(
  plan: Counts,
  fact: Omit<RerunFact, "later"> & { later: Later },
  rerunErrors: boolean,
): void {
  count(plan, storedClass(fact), -fact.keys);
  count(plan, requestedClass(fact, rerunErrors), fact.keys);
}

/**
 * A request's facts from its key's attempts (those for the sample's current fingerprint, in the
 * order the store keeps them): its outcome as the figures keep it (a scored attempt over an
 * error, then the latest) and the latest attempt after `after` (the first scored, else the last).
 */
function factOf(
  attempts: readonly AttemptHead[],
  after: number,
  flying: boolean,
): Omit<RerunFact, "later"> & { later: Later } {
  let held: AttemptHead | undefined;
  for (const a of attempts) if (outranks(a, held)) held = a;
  let latest: AttemptHead | undefined;
  for (const a of attempts) {
    if (a.attempt <= after || latest?.status === "scored") continue;
    latest = a;
  }
  const later: Later = !latest
    ? "none"
    : latest.status === "scored"
      ? "scored"
      : latest.error?.type === "scorer"
        ? "scorer-error"
        : "error";
  return {
    held: held?.status ?? null,
    heldScorer: held?.error?.type === "scorer",
    flying,
    later,
    keys: 1,
  };
}

/** Where `storedPlan` counts a key of these facts. */
function storedClass(fact: Pick<RerunFact, "held" | "heldScorer" | "flying">): KeyClass {
  if (fact.held === "scored") return "preserved";
  if (fact.flying) return "interrupted";
  if (fact.held) return fact.heldScorer ? "rescore" : "errored";
  return "neverStarted";
}

/** Where `planRun` counts a key asked to re-run, by its latest attempt after the one it follows. */
function requestedClass(fact: { later: Later; flying: boolean }, rerunErrors: boolean): KeyClass {
  if (fact.later === "scored") return "preserved";
  if (fact.later === "none") return "rerun";
  if (fact.flying) return "interrupted";
  // A re-run that errored leaves the key's earlier scored attempt as its outcome.
  if (!rerunErrors) return "preserved";
  return fact.later === "scorer-error" ? "rescore" : "errored";
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

/** The counts of a plan this corrects (a `PlanSummary`'s, a paged resume's). */
type Counts = Pick<
  PlanSummary,
  "preserved" | "toExecute" | "toRescore" | "interrupted" | "errored" | "neverStarted" | "rerun"
>;

/** Adds `n` keys (or takes them, negative) to where a plan counts them. */
function count(plan: Counts, where: KeyClass, n: number): void {
  if (where === "preserved") plan.preserved += n;
  else if (where === "rescore") plan.toRescore += n;
  else {
    plan.toExecute += n;
    plan[where] += n;
  }
}
