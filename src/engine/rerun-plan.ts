import type { PlanSummary } from "../core/events.js";
import { keyString } from "../core/keys.js";
import { outranks } from "../core/run-figures.js";
import type { Key, RerunRequest } from "../core/types.js";
import type { AttemptHead, Store } from "../store/types.js";

/** How many requests' samples one read of their attempts covers. */
const SAMPLES_A_READ = 1_000;

/** Where a plan counts a key (the fields of a PlanSummary it adds one to). */
type KeyClass = "preserved" | "rescore" | "interrupted" | "errored" | "neverStarted" | "rerun";

/** A key's outcome as a plan classes it: its status, and whether its error is a scorer's. */
type Outcome = Pick<AttemptHead, "status" | "attempt"> & { scorerError: boolean };

/**
 * The plan `storedPlan` counted from the figures, corrected for the run's re-run requests as
 * `planRun` reads them: a requested key's attempts up to the one it follows are history, so until
 * it has a scored attempt after that one it is to execute (`rerun` when nothing came after, else
 * as its last later attempt says). Reads the requested keys' attempts 1,000 samples at a time
 * (`reads.sampleHeads`): none of the run's other keys, nothing held beyond one read.
 *
 * @example const plan = await withRerunRequests(store, run.id, counted, run.config.rerun, inflight);
 */
export async function withRerunRequests(
  store: Store,
  runId: string,
  counted: PlanSummary,
  requests: readonly RerunRequest[],
  inflight: readonly Key[],
): Promise<PlanSummary> {
  const plan = { ...counted };
  const flying = new Set(inflight.map(keyString));
  // One request a key, the last one given (as planRun reads them).
  const asked = [...new Map(requests.map((r) => [keyString(r), r])).values()];
  for (let from = 0; from < asked.length;) {
    const chunk: RerunRequest[] = [];
    const ids = new Set<string>();
    for (; from < asked.length && ids.size < SAMPLES_A_READ; from++) {
      chunk.push(asked[from]!);
      ids.add(asked[from]!.sampleId);
    }
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
    for (const request of chunk) {
      const k = keyString(request);
      const own = attempts.get(k) ?? [];
      const inFlight = flying.has(k);
      count(plan, storedClass(best(own), inFlight), -1);
      count(plan, requestedClass(own, request.after, inFlight), 1);
    }
  }
  return plan;
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
function requestedClass(attempts: readonly AttemptHead[], after: number, inFlight: boolean) {
  let latest: AttemptHead | undefined;
  for (const a of attempts) {
    if (a.attempt <= after || latest?.status === "scored") continue;
    latest = a;
  }
  if (latest?.status === "scored") return "preserved";
  if (!latest) return "rerun";
  if (inFlight) return "interrupted";
  return outcome(latest).scorerError ? "rescore" : "errored";
}

function outcome(a: AttemptHead): Outcome {
  return { status: a.status, attempt: a.attempt, scorerError: a.error?.type === "scorer" };
}

function count(plan: PlanSummary, where: KeyClass, sign: 1 | -1): void {
  if (where === "preserved") plan.preserved += sign;
  else if (where === "rescore") plan.toRescore += sign;
  else {
    plan.toExecute += sign;
    plan[where] += sign;
  }
}
