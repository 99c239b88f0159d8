import { canonicalJson } from "./json.js";
import type { AttemptRef } from "./plan.js";
import type { Attempt, AttemptDraft, AttemptStatus, SampleRecord } from "./types.js";

/**
 * The one rule of what an earlier run's outcome may be reused as: a scored one, a limited one
 * included (it is scored, with its `limit`). Errors never are (their key executes again).
 *
 * @example reusableStatus("scored") // true
 */
export function reusableStatus(status: AttemptStatus): boolean {
  return status === "scored";
}

/** Why the keys of one group were not reused, and how many they are. */
export interface NotReused {
  reason: string;
  keys: number;
}

/** What reuse from an earlier run did for a new run: recorded in its configuration (`reuse`). */
export interface ReuseSummary {
  /** The run reused from; null when none was found (`latest` with no matching run). */
  source: string | null;
  /** What was asked: a run id, or `latest`. */
  requested: string;
  /** Keys recorded from the source run (their outputs, and their scores where the scorers match). */
  reused: number;
  /** Of those, keys whose output is scored again by scorers the source did not have as they are now. */
  rescored: number;
  /** The keys not reused, grouped by why, most first. */
  notReused: NotReused[];
}

/**
 * A run's reuse as its configuration records it: the summary, and `seeded` once every key it
 * reuses is stored (a start, or a resume's claim, seeds them all before anything executes; a
 * kill between two pages of the seed leaves it absent, and a resume then seeds the rest).
 */
export interface RecordedReuse extends ReuseSummary {
  seeded?: true;
}

/** The summary of a recorded reuse, as reports show it (`seeded` is the store's concern). */
export function reuseSummaryOf({ seeded: _seeded, ...summary }: RecordedReuse): ReuseSummary {
  return summary;
}

/** An attempt without its output and transcript: what planning reads of the source run. */
export type SourceAttempt = Omit<Attempt, "output" | "transcript">;

/** What a reused attempt's draft depends on besides the attempt: the source, the scorers now. */
export interface ReuseScorers {
  source: string | null;
  /** The new eval's scorers, in order; those in `rescore` are new or changed since the source. */
  scorers: readonly string[];
  rescore: readonly string[];
}

export interface ReusePlanInput extends ReuseScorers {
  requested: string;
  /**
   * Why nothing of the source can be reused (its eval or model differ, there is none), each as
   * one line (`solver.model: "a" → "b"`); empty when the source's identity matches.
   */
  blockers: readonly string[];
  /** The new run's samples and epochs. */
  samples: readonly SampleRecord[];
  epochs: number;
  /** The source run's snapshot and attempts, folded over the new run's keys (`ReuseSource`). */
  folded: ReuseSource;
}

export interface ReusePlan extends ReuseSummary {
  /**
   * The source attempts to record in the new run before it is planned (each as `reusedDraft`
   * makes it), in the new run's key order (epoch, then dataset order): the key, its number.
   */
  origins: AttemptRef[];
}

/** What planning reads of a source attempt: key, number, status, its sample's fingerprint. */
export type SourceFacts = Pick<
  SourceAttempt,
  "sampleId" | "epoch" | "attempt" | "status" | "fingerprint"
>;

/**
 * The source run as a plan of a new run's keys reads it, folded a page at a time: per key, its
 * latest reusable attempt of the new sample's fingerprint, else its latest (`addAttempts`); per
 * sample, whether the source's snapshot has it, and as it is (`addSnapshot`), with the source's
 * record of a changed one (`addChanged`). Held in arrays over the new run's keys and samples,
 * not as the source's attempts and snapshot (at 100,000 keys, held whole with the maps built
 * over them, they put ~125 MB on the peak RSS of `stet plan --reuse`).
 *
 * @example const source = new ReuseSource(samples, 1); source.addAttempts(page);
 */
export class ReuseSource {
  private readonly position = new Map<string, number>();
  /** Per key (epoch-major, then dataset order), its outcome's attempt number; 0: none. */
  private readonly numbers: Int32Array;
  private readonly reusable: Uint8Array;
  /** Per sample: 0 not in the source's snapshot, 1 the same there, 2 changed since. */
  private readonly was: Uint8Array;
  /** The source's records of the changed samples, by position, once `addChanged` read them. */
  private readonly changed = new Map<number, SampleRecord>();

  constructor(
    private readonly samples: readonly SampleRecord[],
    private readonly epochs: number,
  ) {
    samples.forEach((r, i) => this.position.set(r.sample.id, i));
    this.numbers = new Int32Array(samples.length * epochs);
    this.reusable = new Uint8Array(samples.length * epochs);
    this.was = new Uint8Array(samples.length);
  }

  /** Folds in ids and fingerprints of the source's snapshot; one of another sample says nothing. */
  addSnapshot(prints: Iterable<{ sampleId: string; fingerprint: string }>): void {
    for (const { sampleId, fingerprint } of prints) {
      const index = this.position.get(sampleId);
      if (index === undefined) continue;
      this.was[index] = this.samples[index]!.fingerprint === fingerprint ? 1 : 2;
    }
  }

  /** Whether a sample changed since the source: then `addChanged` is owed its records. */
  anyChanged(): boolean {
    return this.was.includes(2);
  }

  /** The ids of the samples changed since the source, whose records `addChanged` is owed. */
  changedIds(): string[] {
    return this.samples.filter((_, i) => this.was[i] === 2).map((r) => r.sample.id);
  }

  /** Keeps the source's records of the changed samples among `records` (what reasons name). */
  addChanged(records: Iterable<SampleRecord>): void {
    for (const record of records) {
      const index = this.position.get(record.sample.id);
      if (index !== undefined && this.was[index] === 2) this.changed.set(index, record);
    }
  }

  /** Folds attempts in: one of another sample, epoch or fingerprint decides no key. */
  addAttempts(attempts: Iterable<SourceFacts>): void {
    for (const attempt of attempts) {
      const index = this.position.get(attempt.sampleId);
      if (index === undefined || attempt.epoch < 1 || attempt.epoch > this.epochs) continue;
      if (this.samples[index]!.fingerprint !== attempt.fingerprint) continue;
      const slot = (attempt.epoch - 1) * this.samples.length + index;
      const held = this.numbers[slot]!;
      const heldReusable = this.reusable[slot] === 1;
      const reusable = reusableStatus(attempt.status);
      const better =
        held === 0 ||
        (reusable && !heldReusable) ||
        (reusable === heldReusable && attempt.attempt > held);
      if (!better) continue;
      this.numbers[slot] = attempt.attempt;
      this.reusable[slot] = reusable ? 1 : 0;
    }
  }

  /** The outcome of the key of the sample at `index` and `epoch`; undefined when it has none. */
  of(index: number, epoch: number): { attempt: number; reusable: boolean } | undefined {
    const slot = (epoch - 1) * this.samples.length + index;
    const attempt = this.numbers[slot]!;
    return attempt === 0 ? undefined : { attempt, reusable: this.reusable[slot] === 1 };
  }

  /** Why the source has no outcome for the sample at `index`: new, changed (its fields), unrun. */
  missingReason(index: number): string {
    if (this.was[index] === 0) return "new sample";
    if (this.was[index] === 1) return "not executed in the source";
    const [was, now] = [this.changed.get(index)!, this.samples[index]!];
    const fields = (["input", "target", "metadata"] as const).filter(
      (field) =>
        canonicalJson(was.sample[field] ?? null) !== canonicalJson(now.sample[field] ?? null),
    );
    return `sample changed: ${fields.length > 0 ? fields.join(", ") : "content"}`;
  }
}

/**
 * Which keys of a new run an earlier run's outcomes stand for: every key whose sample fingerprint
 * matches a reusable outcome of the source (see `reusableStatus`), when nothing blocks reuse.
 * Every other key is counted under why: `new sample`, `sample changed: input`, `source outcome
 * is an error`, `not executed in the source`, or a blocker. Pure and deterministic.
 *
 * @example planReuse({ source: "r_a", requested: "latest", blockers: [], ... }).reused // 174
 */
export function planReuse(input: ReusePlanInput): ReusePlan {
  const reasons = new Map<string, number>();
  const skip = (reason: string) => reasons.set(reason, (reasons.get(reason) ?? 0) + 1);
  const origins: AttemptRef[] = [];
  const blocked = input.blockers.join("; ");
  for (let epoch = 1; epoch <= input.epochs; epoch++) {
    input.samples.forEach((record, index) => {
      if (blocked) return void skip(blocked);
      const found = input.folded.of(index, epoch);
      if (found?.reusable) {
        origins.push({ sampleId: record.sample.id, epoch, attempt: found.attempt });
      } else if (found) skip("source outcome is an error");
      else skip(input.folded.missingReason(index));
    });
  }
  return {
    source: input.source,
    requested: input.requested,
    reused: origins.length,
    rescored: input.rescore.length > 0 ? origins.length : 0,
    notReused: sortedReasons(reasons),
    origins,
  };
}

/** Keys counted by why they were not reused, as a summary lists them: most first, then by reason. */
function sortedReasons(reasons: ReadonlyMap<string, number>): NotReused[] {
  return [...reasons]
    .map(([reason, keys]) => ({ reason, keys }))
    .sort((a, b) => b.keys - a.keys || (a.reason < b.reason ? -1 : a.reason > b.reason ? 1 : 0));
}

/**
 * The summary of a reuse planned a page of the new run's samples at a time: each page's
 * `planReuse` added, its origins not kept (what a run created from a dataset's pages seeds is
 * found again in the store, `runs/paged-reuse.ts`). The sum is the summary `planReuse` makes of
 * every page's samples at once.
 *
 * @example const tally = new ReuseTally(); tally.add(planReuse(page)); tally.summary();
 */
export class ReuseTally {
  private readonly reasons = new Map<string, number>();
  private reused = 0;
  private rescored = 0;

  add(plan: ReuseSummary): void {
    this.reused += plan.reused;
    this.rescored += plan.rescored;
    for (const { reason, keys } of plan.notReused) {
      this.reasons.set(reason, (this.reasons.get(reason) ?? 0) + keys);
    }
  }

  summary(source: string | null, requested: string): ReuseSummary {
    const { reused, rescored } = this;
    return { source, requested, reused, rescored, notReused: sortedReasons(this.reasons) };
  }
}

/**
 * A picked source attempt as the new run records it: provenance `imported` from
 * `run:<source>#<attempt>`. One still to be scored by a new scorer is recorded as that scorer's
 * error (its other scores carried), so the run, and a resume of it, scores it.
 *
 * @example reusedDraft(attempt, { source: "r_a", scorers: ["exact"], rescore: [] }).provenance
 */
export function reusedDraft(attempt: Attempt, input: ReuseScorers): AttemptDraft {
  const rescore = new Set(input.rescore);
  const kept = new Set(input.scorers.filter((name) => !rescore.has(name)));
  const scores = attempt.scores.filter((s) => kept.has(s.scorer));
  const pending = input.scorers.filter((name) => rescore.has(name));
  const draft: AttemptDraft = {
    sampleId: attempt.sampleId,
    epoch: attempt.epoch,
    status: pending.length > 0 ? "error" : attempt.status,
    output: attempt.output,
    scores,
    usage: attempt.usage,
    transcript: attempt.transcript,
    error:
      pending.length > 0
        ? {
            type: "scorer",
            scorer: pending[0]!,
            message: `reused from run ${input.source}; not scored yet by ${pending.join(", ")}`,
          }
        : null,
    startedAt: attempt.startedAt,
    completedAt: attempt.completedAt,
    durationMs: attempt.durationMs,
    fingerprint: attempt.fingerprint,
    provenance: { kind: "imported", source: `run:${input.source}#${attempt.attempt}` },
  };
  if (attempt.retries !== undefined) draft.retries = attempt.retries;
  if (attempt.redacted !== undefined) draft.redacted = attempt.redacted;
  if (attempt.limit !== undefined) draft.limit = attempt.limit;
  return draft;
}
