import { StetError } from "../core/errors.js";
import { keyString } from "../core/keys.js";
import { countingScores } from "../core/run-figures.js";
import type { Key, RerunRecord, RerunRequest, Run, SampleRecord } from "../core/types.js";
import { recordedReruns, type RerunAskNow } from "../engine/rerun-plan.js";
import type { AttemptHead, Store } from "../store/types.js";

/** What a resume asks to execute again (see ResumeOptions). */
export interface RerunAsk {
  rerun?: readonly string[] | undefined;
  rerunFailed?: boolean | undefined;
  rerunLimited?: boolean | undefined;
}

/** Whether a resume asks for keys to execute again (`--rerun*`). */
export function asksRerun(ask: RerunAsk): boolean {
  return (ask.rerun?.length ?? 0) > 0 || ask.rerunFailed === true || ask.rerunLimited === true;
}

/** The most samples of recorded re-run requests a resume reads one by one instead of the run. */
const RECORDED_RERUN_READS = 256;

/**
 * Whether a resume plans from the attempts of its open samples only (`plan.ts`'s `open`): it asks
 * no re-run (`--rerun-failed` looks at every outcome) and the recorded requests name a few hundred
 * samples at most (`recorded.samples`), whose attempts it reads one by one.
 */
export function plansSparse(ask: RerunAsk, recorded: RecordedReruns): boolean {
  const { samples } = recorded;
  return !asksRerun(ask) && samples !== undefined && samples.length <= RECORDED_RERUN_READS;
}

/** The most requests a resume reads before it knows whether it holds them all. */
const FIRST_READ = 4_096;

/**
 * What a resume first reads of the run's recorded re-run requests: whether it has any and, when
 * they are few (the first read of `FIRST_READ` holds them all), their samples' ids. All of them
 * (`all()`) are read only by a resume that plans the whole run: one planned a page at a time
 * reads each page's own (`plannedPages`).
 */
export interface RecordedReruns {
  any: boolean;
  /** The ids of the requests' samples; undefined when they are many. */
  samples: readonly string[] | undefined;
  all(): Promise<RerunRequest[]>;
}

/** The run's `RecordedReruns`. */
export async function recordedRerunsOf(store: Store, runId: string): Promise<RecordedReruns> {
  let first: RerunRequest[] = [];
  for await (const page of store.reads.rerunPages(runId, FIRST_READ)) {
    first = page;
    break;
  }
  const few = first.length < FIRST_READ;
  return {
    any: first.length > 0,
    samples: few ? [...new Set(first.map((r) => r.sampleId))] : undefined,
    all: async () => (few ? first : recordedReruns(store, runId)),
  };
}

/**
 * The requests a claim records (`updateConfig`'s `reruns`: all of them, replacing the recorded),
 * or undefined when they are the ones recorded (same keys, each after the same attempt).
 */
function changedReruns(
  recorded: readonly RerunRequest[],
  next: readonly RerunRequest[],
): RerunRequest[] | undefined {
  if (recorded.length === next.length) {
    const was = new Map(recorded.map((r) => [keyString(r), r.after]));
    if (next.every((r) => was.get(keyString(r)) === r.after)) return undefined;
  }
  return [...next];
}

/** Up to five ids, then how many more. */
export function preview(ids: readonly string[]): string {
  return ids.length <= 5
    ? ids.join(", ")
    : `${ids.slice(0, 5).join(", ")} and ${ids.length - 5} more`;
}

type RerunPlanning =
  { ok: true; requests: RerunRequest[]; record?: RerunRecord } | { ok: false; error: StetError };

/** How many sample ids of `--rerun` one read of their attempts covers. */
const IDS_A_READ = 1_000;

/**
 * What a resume planned a page at a time asks to re-run (`RerunAskNow`), read without the run's
 * dataset or attempts: the keys of the `--rerun` ids (every epoch, each after its last attempt),
 * whose attempts are read by id, and `--rerun-failed` and `--rerun-limited`, which the store
 * resolves from the run's figures. Nothing asked: no ask. A refusal names ids the run lacks.
 */
export async function askedNow(
  store: Store,
  run: Run,
  options: RerunAsk,
): Promise<{ ok: true; ask?: RerunAskNow } | { ok: false; error: StetError }> {
  if (!asksRerun(options)) return { ok: true };
  const ids = [...new Set(options.rerun ?? [])];
  const added: RerunRequest[] = [];
  const unknown: string[] = [];
  for (let i = 0; i < ids.length; i += IDS_A_READ) {
    const chunk = ids.slice(i, i + IDS_A_READ);
    const { fingerprints, heads } = await store.reads.sampleHeads(run.id, chunk);
    const known = new Set(fingerprints.map((f) => f.sampleId));
    unknown.push(...chunk.filter((id) => !known.has(id)));
    const last = new Map<string, number>();
    for (const a of heads) {
      const k = keyString(a);
      last.set(k, Math.max(last.get(k) ?? 0, a.attempt));
    }
    for (const sampleId of known) {
      for (let epoch = 1; epoch <= run.config.epochs; epoch++) {
        added.push({ sampleId, epoch, after: last.get(keyString({ sampleId, epoch })) ?? 0 });
      }
    }
  }
  if (unknown.length > 0) return { ok: false, error: unknownRerunIds(run, unknown) };
  const outcomes = { failed: options.rerunFailed === true, limited: options.rerunLimited === true };
  return { ok: true, ask: { added, outcomes } };
}

/** The re-run planning of a resume planned a page at a time: the ask recorded by its claim. */
export function pagedReruns(ask: RerunAskNow | undefined): RerunPlanning {
  return { ok: true, requests: [], ...(ask ? { record: { asked: true, ...ask } } : {}) };
}

function unknownRerunIds(run: Run, unknown: readonly string[]): StetError {
  return new StetError(
    "E_USAGE",
    `--rerun names sample ids run ${run.id} does not have: ${preview([...new Set(unknown)])}`,
    { details: { runId: run.id, unknown } },
  );
}

/**
 * The keys to execute again: those still pending from an earlier request (no scored attempt after
 * the one they follow) and those asked for now (`rerun` ids, every epoch; `rerunFailed`: outcomes
 * below 1 on some scorer; `rerunLimited`: outcomes a per-sample limit ended), each following the
 * key's last attempt as stored now; with `record`, those the claim records when they are not the
 * `recorded` ones.
 */
export function rerunRequests(
  run: Run,
  recorded: readonly RerunRequest[],
  snapshot: readonly SampleRecord[],
  attempts: readonly AttemptHead[],
  options: RerunAsk,
): RerunPlanning {
  const unknown = unknownIds(snapshot, options.rerun ?? []);
  if (unknown.length > 0) return { ok: false, error: unknownRerunIds(run, unknown) };
  if (recorded.length === 0 && wantedNone(options)) return { ok: true, requests: [] };
  const requests = pendingRequests(run, recorded, snapshot, attempts, options);
  const record = changedReruns(recorded, requests);
  return { ok: true, requests, ...(record ? { record } : {}) };
}

/** The requests still pending and those asked now (see `rerunRequests`). */
function pendingRequests(
  run: Run,
  recorded: readonly RerunRequest[],
  snapshot: readonly SampleRecord[],
  attempts: readonly AttemptHead[],
  options: RerunAsk,
): RerunRequest[] {
  const fingerprintOf = new Map(snapshot.map((r) => [r.sample.id, r.fingerprint]));
  const last = new Map<string, number>();
  const outcome = new Map<string, AttemptHead>();
  for (const a of attempts) {
    const k = keyString(a);
    last.set(k, Math.max(last.get(k) ?? 0, a.attempt));
    if (a.status !== "scored" || fingerprintOf.get(a.sampleId) !== a.fingerprint) continue;
    if ((outcome.get(k)?.attempt ?? 0) < a.attempt) outcome.set(k, a);
  }
  const pending = new Map<string, RerunRequest>();
  for (const request of recorded) {
    const k = keyString(request);
    if ((outcome.get(k)?.attempt ?? 0) <= request.after) pending.set(k, request);
  }
  const asked: Key[] = [];
  const wanted = new Set(options.rerun ?? []);
  for (let epoch = 1; epoch <= run.config.epochs; epoch++) {
    for (const { sample } of snapshot) {
      const key = { sampleId: sample.id, epoch };
      const scored = outcome.get(keyString(key));
      const failed =
        options.rerunFailed === true &&
        scored !== undefined &&
        countingScores(scored.scores).some(([, value]) => value < 1);
      const limited = options.rerunLimited === true && scored?.limit !== undefined;
      if (wanted.has(sample.id) || failed || limited) asked.push(key);
    }
  }
  for (const key of asked) {
    const k = keyString(key);
    pending.set(k, { sampleId: key.sampleId, epoch: key.epoch, after: last.get(k) ?? 0 });
  }
  return [...pending.values()];
}

function wantedNone(options: RerunAsk): boolean {
  return (
    (options.rerun ?? []).length === 0 &&
    options.rerunFailed !== true &&
    options.rerunLimited !== true
  );
}

/** The ids of `asked` no snapshot record has (the snapshot's ids are gathered only when asked). */
function unknownIds(snapshot: readonly SampleRecord[], asked: readonly string[]): string[] {
  if (asked.length === 0) return [];
  const ids = new Set(snapshot.map((r) => r.sample.id));
  return asked.filter((id) => !ids.has(id));
}
