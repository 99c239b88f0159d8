import { keyString } from "../core/keys.js";
import type { JournalKeep } from "../core/eval.js";
import { countedPlan } from "../core/plan.js";
import { reusableStatus } from "../core/reuse-plan.js";
import type { Attempt, OwnerIdentity, Run } from "../core/types.js";
import type { Execution } from "../engine/execute-run.js";
import { countedResume } from "../engine/figures-report.js";
import { SnapshotKeys } from "../engine/snapshot-keys.js";
import type { Store } from "../store/types.js";
import { pagedRescoreUnits } from "./rescore-units.js";
import { recordReused, type PlannedReuse } from "./reuse-run.js";

// A new run of a dataset file read a page at a time (`EngineEval.pages`) with `--reuse`: what
// `planReuseFrom` planned a page at a time is seeded and executed with nothing of the run listed.

/**
 * `seedReused` for a run created from a dataset's pages, whose reuse was planned a page at a
 * time (`origins` empty): the keys `planReuse` picked are found again, in the same order, from
 * the source's attempts a page at a time (`attemptPages`), each key's latest reusable attempt of
 * the fingerprint the new run's snapshot has for its sample (looked up a page at a time,
 * `reads.sampleHeads`), and recorded as `seedReused` records them. Nothing is listed or held
 * beyond a page.
 */
export async function seedReusedPages(
  store: Store,
  run: Pick<Run, "id" | "config">,
  token: string,
  plan: PlannedReuse,
): Promise<void> {
  if (plan.source === null || plan.reused === 0) return;
  const picks = new LatestReusable(run.config.epochs);
  for await (const page of store.reads.attemptPages(plan.source)) {
    const ids = [...new Set(page.map((a) => a.sampleId))];
    const { fingerprints } = await store.reads.sampleHeads(run.id, ids);
    const picked = picks.take(page, new Map(fingerprints.map((f) => [f.sampleId, f.fingerprint])));
    await recordReused(store, run.id, token, plan, picked);
  }
  await recordReused(store, run.id, token, plan, picks.end());
}

/**
 * Of attempts in key order (sample id, epoch, attempt), a page at a time, each key's latest
 * reusable one (`reusableStatus`) of the fingerprint its sample has now, for epochs 1 to
 * `epochs`: what `ReuseSource` and `planReuse` pick of the same attempts. A key's last attempt may
 * be on the next page, so its pick is given once the key is over (`take` of a later page, `end`).
 */
class LatestReusable {
  #key = "";
  #best: Attempt | undefined;

  constructor(private readonly epochs: number) {}

  take(page: readonly Attempt[], now: ReadonlyMap<string, string>): Attempt[] {
    const picked: Attempt[] = [];
    for (const attempt of page) {
      const key = keyString(attempt);
      if (key !== this.#key) picked.push(...this.end());
      this.#key = key;
      if (attempt.epoch < 1 || attempt.epoch > this.epochs) continue;
      if (now.get(attempt.sampleId) !== attempt.fingerprint) continue;
      if (reusableStatus(attempt.status)) this.#best = attempt;
    }
    return picked;
  }

  end(): Attempt[] {
    const best = this.#best;
    this.#best = undefined;
    return best ? [best] : [];
  }
}

/**
 * What a new run created from a dataset's pages executes once it is seeded (its reuse,
 * `seedReusedPages`, or the completed results of `--resume-from`): its keys planned as a resume
 * from the snapshot's pages plans them (`countedResume`, `SnapshotKeys` with `resume`), so the
 * seeded keys are not executed and seeded outputs awaiting new scorers are scored first
 * (`pagedRescoreUnits`), nothing listed.
 */
export async function seededPages(
  store: Store,
  run: Run,
  owner: OwnerIdentity,
  journalKeep: JournalKeep | undefined,
): Promise<Pick<Execution, "run" | "owner" | "plan" | "keys" | "rescore">> {
  const left = await countedResume(store, run);
  // A new run's figures are kept with its own reducer, which is what counts it.
  if (!left) throw new Error(`run ${run.id}: its figures do not count it`);
  const resume = { inflight: left.inflight };
  const plan = countedPlan(left.plan);
  const keys = new SnapshotKeys(store, run.id, run.config.epochs, { resume });
  if (plan.toRescore.length === 0) return { run, owner, plan, keys };
  const units = pagedRescoreUnits(store, run, resume);
  const pass = `reuse-${owner.token.slice(0, 12)}`;
  return { run, owner, plan, keys, rescore: { units, pass, journalKeep } };
}
