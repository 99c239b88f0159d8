import type { PagedSamples } from "../core/eval.js";
import { countedPlan, planRun, type CountedResume, type ResumePlan } from "../core/plan.js";
import { SeenIds } from "../core/seen-ids.js";
import type { Key, RerunRequest, Run, SampleRecord } from "../core/types.js";
import { countedResume } from "../engine/figures-report.js";
import { plannedRequests, withRerunRequests, type RerunAskNow } from "../engine/rerun-plan.js";
import type { SnapshotResume } from "../engine/snapshot-keys.js";
import type { Store } from "../store/types.js";

/**
 * Whether a resume may plan from the run's snapshot a page at a time (`pagedResume`) instead of
 * loading its dataset file: it asked for pages (`stet resume` does, for files of
 * `PAGED_DATASET_BYTES`), and `pageable` (a worker's resume with re-run requests, recorded or
 * asked, is not; nor one of a run that may owe reused keys, `mayOweReuse`, whose owed seeding
 * plans against listed keys). With the stamp the run recorded, if any: a file that still has it
 * is not read.
 *
 * @example const ask = pagedResumeAsk(run, { paged: { minBytes: 8 << 20 } }, true); // { stamp }
 */
export function pagedResumeAsk(
  run: Run,
  options: { paged?: { minBytes: number } },
  pageable: boolean,
): { stamp?: string } | undefined {
  const { datasetStamp } = run.config;
  if (!options.paged || !pageable) return undefined;
  return datasetStamp === undefined ? {} : { stamp: datasetStamp };
}

/**
 * Whether a run started with `--reuse` may still owe reused keys (`owedReuse`): its seeding was
 * cut short, so its configuration does not say `seeded` (`markSeeded`). False for a run started
 * without `--reuse`.
 *
 * @example if (mayOweReuse(run)) ...; // plan against listed keys
 */
export function mayOweReuse(run: Run): boolean {
  return run.config.reuse !== undefined && run.config.reuse.seeded !== true;
}

/** What a paged resume asks of a changed file's samples (see `pagedResume`). */
export interface PagedResumeOptions {
  /** Re-run keys whose latest attempt is an error (default true; `--no-rerun-errors`). */
  rerunErrors?: boolean;
  /** Re-run the keys of samples whose content changed (`--rerun-changed`). */
  rerunChanged?: boolean;
  /** A re-run asked now (`askedNow`), planned with the recorded requests. */
  ask?: RerunAskNow | undefined;
}

/**
 * The plan of a resume from the run's snapshot a page at a time: counted from the figures the
 * store keeps (`countedResume`), its keys then read from the snapshot a page at a time and each
 * page planned with its own attempts (`SnapshotKeys`' `resume`, with the in-flight keys returned
 * here), stored scorer errors scored again as they are found (`pagedRescoreUnits`). Nothing of the
 * dataset, no list of keys, samples or attempts is held. With `rerunErrors: false` the errored
 * keys are kept, scorer errors too, as `planRun` keeps them.
 *
 * A dataset file that still has the run's stamp (`unchanged`) is not read. Another is read a page
 * at a time and compared with the snapshot (`pagedChanges`): the samples whose content changed
 * are listed (the plan's `changed`, their new records its `samples`, what a claim with
 * `rerunChanged` writes) and their keys counted as `planRun` counts them. Undefined when the
 * figures cannot count the run (kept with another reducer) or the file is not the snapshot's
 * samples (one gone or repeated, too many changed): the resume then loads the dataset whole.
 *
 * @example const paged = await pagedResume(store, run, { unchanged: true, pages });
 */
export async function pagedResume(
  store: Store,
  run: Run,
  file: { unchanged: boolean; pages: PagedSamples },
  options: PagedResumeOptions = {},
): Promise<{ plan: ResumePlan; resume: SnapshotResume; scoredAny: boolean } | undefined> {
  let changed = file.unchanged ? [] : await pagedChanges(store, run, file.pages);
  if (!changed) return undefined;
  const left = await countedResume(store, run);
  if (!left) return undefined;
  const { inflight } = left;
  const rerunErrors = options.rerunErrors ?? true;
  // The run's re-run requests, as `planRun` reads them (and the pages will, `SnapshotKeys`).
  const { ask } = options;
  const plan = await withRerunRequests(store, run.id, left.plan, inflight, rerunErrors, ask);
  let counts: CountedResume = rerunErrors
    ? plan
    : {
        ...plan,
        toExecute: plan.toExecute - plan.errored,
        toRescore: 0,
        errored: 0,
        erroredKept: plan.errored + plan.toRescore,
      };
  if (changed.length > 0) {
    const moved = await changedDelta(store, run, changed, inflight, {
      rerunErrors,
      rerunChanged: options.rerunChanged ?? false,
      ask,
    });
    counts = moved.delta(counts);
    changed = moved.changed;
  }
  // Any key scored for the snapshot's content (what `checkEval` asks), a changed sample's too.
  const scoredAny = left.plan.preserved > 0;
  return { plan: countedPlan(counts, changed), resume: { inflight, rerunErrors }, scoredAny };
}

/** The most changed samples a paged resume lists; a file with more loads whole. */
const MAX_LISTED_CHANGES = 10_000;

/**
 * The samples of the run whose content the file changed, as the file has them: the file read a
 * page at a time (each row checked as a load checks it), each page's samples looked up in the
 * snapshot (`reads.sampleHeads`), rows of samples the run does not have passed over (a resume
 * executes the run's samples only). Undefined when the file is not the snapshot's samples: one of
 * them is gone, or an id may be there twice (any row's, the run's or not: `SeenIds`, which may
 * also say so of a few ids that are not), or more than `MAX_LISTED_CHANGES` changed; loading the
 * file whole then says what it says of it (a repeated id refused, naming both rows).
 */
async function pagedChanges(
  store: Store,
  run: Run,
  pages: PagedSamples,
): Promise<SampleRecord[] | undefined> {
  const changed: SampleRecord[] = [];
  const seen = new SeenIds(run.sampleCount);
  let matched = 0;
  for await (const page of pages.read()) {
    const ids = page.map((r) => r.sample.id);
    if (ids.some((id) => seen.add(id))) return undefined;
    const { fingerprints } = await store.reads.sampleHeads(run.id, ids);
    const stored = new Map(fingerprints.map((f) => [f.sampleId, f.fingerprint]));
    for (const record of page) {
      const fingerprint = stored.get(record.sample.id);
      if (fingerprint === undefined) continue;
      matched++;
      if (fingerprint !== record.fingerprint) changed.push(record);
    }
    if (changed.length > MAX_LISTED_CHANGES) return undefined;
  }
  return matched === run.sampleCount ? changed : undefined;
}

/**
 * How the changed samples move a plan's counts: their keys as the counts have them (planned
 * with the snapshot's fingerprints, as the figures count them) taken out, and put back as
 * `planRun` plans them against the file (`changedKeys`, or preserved where a scored attempt
 * stands and they are not re-run). With the changed samples in the snapshot's order (sample ids
 * in the store's byte order), as a plan of the whole run lists them.
 */
async function changedDelta(
  store: Store,
  run: Run,
  changed: readonly SampleRecord[],
  inflight: readonly Key[],
  options: Required<Omit<PagedResumeOptions, "ask">> & Pick<PagedResumeOptions, "ask">,
): Promise<{ delta: (counts: CountedResume) => CountedResume; changed: SampleRecord[] }> {
  const byId = new Map(changed.map((r) => [r.sample.id, r]));
  const { fingerprints, heads } = await store.reads.sampleHeads(run.id, byId.keys());
  const ordered = fingerprints.map((f) => byId.get(f.sampleId)!);
  const ids = new Set(byId.keys());
  // The snapshot's samples as far as planning reads them: their ids and stored fingerprints.
  const snapshot = fingerprints.map((f) => ({
    ...byId.get(f.sampleId)!,
    fingerprint: f.fingerprint,
  }));
  const rerun: RerunRequest[] = [];
  for await (const page of plannedRequests(store, run.id, { ask: options.ask })) {
    rerun.push(...page.filter((r) => ids.has(r.sampleId)));
  }
  const common = {
    snapshot,
    epochs: run.config.epochs,
    attempts: heads,
    inflight: inflight.filter((k) => ids.has(k.sampleId)),
    rerun,
    rerunErrors: options.rerunErrors,
  };
  const was = planRun(common);
  const now = planRun({ ...common, current: byId, rerunChanged: options.rerunChanged });
  const delta = (counts: CountedResume) => {
    const moved = { ...counts };
    for (const name of COUNTS) moved[name] += count(now, name) - count(was, name);
    return moved;
  };
  return { delta, changed: ordered };
}

const COUNTS = [
  "preserved",
  "toExecute",
  "toRescore",
  "neverStarted",
  "interrupted",
  "errored",
  "erroredKept",
  "changedKeys",
  "rerun",
] as const;

function count(plan: ReturnType<typeof planRun>, name: (typeof COUNTS)[number]): number {
  const value = plan[name];
  return typeof value === "number" ? value : value.length;
}
