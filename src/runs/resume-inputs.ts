import type { Key, Run, SampleRecord } from "../core/types.js";
import type { AttemptHead, Store } from "../store/types.js";

/** What a resume plans from (`planRun`'s input), as `readResumeInputs` reads it. */
export interface ResumeInputs {
  /** The run's snapshot as records, by sample id: the dataset's where it matches, else stored. */
  snapshot: SampleRecord[];
  /** Every attempt of the run, or (sparse) every attempt of the `open` samples. */
  attempts: AttemptHead[];
  inflight: readonly Key[];
  /** The samples with a key still to settle, when the store answered it (`planRun`'s `open`). */
  open?: ReadonlySet<string>;
  /** Whether the run has any scored attempt (what `checkEval` asks). */
  scoredAny: boolean;
  /**
   * Every snapshot record is the dataset's own (its id and fingerprint found in `current`):
   * no sample changed or left the dataset.
   */
  allCurrent: boolean;
}

/**
 * Reads what a resume plans from. The snapshot is compared with the dataset a page of
 * fingerprints at a time, and its stored copies are parsed only for samples that changed or left
 * the dataset. With `sparse` (no new re-run asked, nothing changed) the store says which samples
 * still have a key without a scored attempt (`reads.openSampleHeads`; none when the run's figures
 * count every key scored) and only their attempts are read, with those of `alsoRead` (the samples
 * of re-run requests recorded earlier, whose keys have scored attempts): a complete run is planned
 * without reading one attempt row. Otherwise every attempt is read.
 *
 * @example const inputs = await readResumeInputs(store, run, current, true);
 */
export async function readResumeInputs(
  store: Store,
  run: Run,
  current: ReadonlyMap<string, SampleRecord>,
  sparse: boolean,
  alsoRead: readonly string[] = [],
): Promise<ResumeInputs> {
  const runId = run.id;
  const [{ snapshot, changed, allCurrent }, inflight] = await Promise.all([
    snapshotRecords(store, runId, current),
    store.runs.listInflight(runId),
  ]);
  if (sparse && !changed) {
    const { sampleIds, heads } = await openSamples(store, run, snapshot.length);
    const open = new Set(sampleIds);
    for (const sampleId of alsoRead) {
      if (open.has(sampleId)) continue;
      for (const { output: _o, transcript: _t, ...head } of await store.reads.listAttempts(runId, {
        sampleId,
      })) {
        heads.push(head);
      }
    }
    // A sample that is not open has every key scored; an open one may have scored attempts too.
    const scoredAny =
      sampleIds.length < snapshot.length || heads.some((a) => a.status === "scored");
    return { snapshot, attempts: heads, inflight, open, scoredAny, allCurrent };
  }
  const attempts = await store.reads.listAttemptHeads(runId);
  const scoredAny = attempts.some((a) => a.status === "scored");
  return { snapshot, attempts, inflight, scoredAny, allCurrent };
}

/**
 * The samples with a key left to settle and their attempts. The figures the store keeps with
 * every commit count the keys scored for their snapshot fingerprint (`planRun`'s preserved, as
 * `figuresReport` shows): when that is every key, none is open and no attempt is read.
 */
async function openSamples(store: Store, run: Run, samples: number) {
  const { figures } = await store.reads.readFigures(run.id, run.config.reducer);
  if (figures.scored === samples * run.config.epochs) return { sampleIds: [], heads: [] };
  return store.reads.openSampleHeads(run.id, run.config.epochs);
}

/**
 * The run's snapshot as records, in sample-id order. An entry whose fingerprint the current
 * dataset matches is the dataset's record (same sha256, same content); the stored copies are read
 * (a page at a time, keeping only those wanted) when some sample changed or left the dataset, so
 * planning a large unchanged run parses no sample JSON. `changed`: some sample's content changed;
 * `allCurrent`: every entry is the dataset's record.
 */
async function snapshotRecords(
  store: Store,
  runId: string,
  current: ReadonlyMap<string, SampleRecord>,
): Promise<{ snapshot: SampleRecord[]; changed: boolean; allCurrent: boolean }> {
  const snapshot: (SampleRecord | undefined)[] = [];
  const stale = new Map<string, number>();
  let changed = false;
  for await (const page of store.reads.sampleFingerprintPages(runId, 10_000)) {
    for (const { sampleId, fingerprint } of page) {
      const now = current.get(sampleId);
      if (now?.fingerprint === fingerprint) {
        snapshot.push(now);
        continue;
      }
      if (now) changed = true;
      // Its stored copy fills the hole below.
      stale.set(sampleId, snapshot.length);
      snapshot.push(undefined);
    }
  }
  if (stale.size > 0) {
    for await (const page of store.reads.samplePages(runId)) {
      for (const record of page) {
        const at = stale.get(record.sample.id);
        if (at !== undefined) snapshot[at] = record;
      }
    }
  }
  // No hole is left: both reads page the same snapshot rows.
  return { snapshot: snapshot as SampleRecord[], changed, allCurrent: stale.size === 0 };
}

/**
 * The dataset stamp a resume may find the run settled by, without reading its dataset or its
 * snapshot: the run recorded one (`RunConfig.datasetStamp`), its status says it is complete, it
 * has no re-run request, and the figures the store keeps count every key scored. When the
 * dataset file still has that stamp (`findEvalSource`'s `unchanged`), no sample changed and
 * nothing is left: `settledInputs` and `settledPlan` plan it.
 *
 * @example const stamp = await settledStamp(store, run, false); // "1:9f86d0…" or undefined
 */
export async function settledStamp(
  store: Store,
  run: Run,
  /** Whether the run has re-run requests recorded. */
  reruns: boolean,
): Promise<string | undefined> {
  const { datasetStamp, reducer, epochs } = run.config;
  if (datasetStamp === undefined || run.status !== "completed" || reruns) return undefined;
  const { figures } = await store.reads.readFigures(run.id, reducer);
  const settled = figures.reducer === reducer && figures.scored === run.sampleCount * epochs;
  return settled ? datasetStamp : undefined;
}

/**
 * What a run `settledStamp` vouches for plans from: no sample, attempt or mark read. A resume
 * from the snapshot's pages (`pagedResume`) plans from the same, with its in-flight keys and
 * whether it has a scored attempt (its figures count one).
 */
export function settledInputs(inflight: readonly Key[] = [], scoredAny = true): ResumeInputs {
  return { snapshot: [], attempts: [], inflight, open: new Set(), scoredAny, allCurrent: true };
}
