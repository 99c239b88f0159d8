import { addScoringUsage, addUsage, emptyUsage } from "../core/aggregate.js";
import { boughtUsage } from "../core/usage.js";
import { UsageSum } from "../core/usage-sum.js";
import type { Progress, RunEvent } from "../core/events.js";
import { listedKeys, type ExecutionPlan } from "../core/plan.js";
import type { Attempt, Key, Scoring } from "../core/types.js";
import { snapshotIndexOf, snapshotRecordOf } from "./snapshot-keys.js";

/**
 * An execution's progress as it commits: the counts the events carry, what this invocation spent
 * (its attempts' and scorings' usage), and which stored attempts and scorings it committed (what
 * the report counts as "now").
 *
 * @example const counts = new RunProgress(plan, 1, emit); counts.attemptCommitted(attempt, true);
 */
export class RunProgress {
  readonly progress: Progress;
  /** `performance.now()` when the execution began. */
  readonly startedAt = performance.now();
  readonly #spentNow = emptyUsage();
  readonly #plan: ExecutionPlan;
  readonly #epochs: number;
  readonly #emit: (event: RunEvent) => void;
  readonly #open: (() => number | undefined) | undefined;
  // Per key (sample index × epochs + epoch − 1), the first attempt number this invocation
  // committed: attempts are numbered in commit order, so "committed now" is "at least that".
  // A typed array, not a set of key strings: a large run's report needs no more.
  readonly #firstNow: Int32Array;
  // Sample ids to their index, made only when a key the plan's list did not make is asked about
  // (a worker's leased keys, the report's stored attempts): a key of the plan knows its sample.
  #indexOf: Map<string, number> | undefined;
  #waitingSince: number | undefined;
  /**
   * How many scorings this invocation committed and what they spent (a judge's calls), summed
   * exactly as a report sums the stored rows: no set of their identities, which would grow with
   * a rescore of every key.
   */
  readonly scorings = { committed: 0, spentNow: new UsageSum() };

  readonly #allNow: boolean;

  /**
   * `open`: a worker's count of the run's open keys at its latest claim (`KeySource.open`).
   * `allNow`: every stored attempt of the run is this invocation's (a new run executing from its
   * snapshot's pages, whose plan lists no sample to index its keys by).
   */
  constructor(
    plan: ExecutionPlan,
    epochs: number,
    emit: (event: RunEvent) => void,
    open?: () => number | undefined,
    allNow = false,
  ) {
    this.#plan = plan;
    this.#allNow = allNow;
    this.#epochs = epochs;
    this.#emit = emit;
    this.#open = open;
    this.progress = {
      total: plan.total,
      done: plan.preserved,
      errored: plan.erroredKept,
      executed: 0,
      inflight: 0,
      spentNowUsd: 0,
      unpricedNow: 0,
      elapsedMs: 0,
    };
    // A plan that lists no sample (its keys read from the snapshot) has one a place of it.
    const samples = listedKeys(plan) ? plan.samples.length : plan.total / epochs;
    this.#firstNow = new Int32Array(allNow ? 0 : samples * epochs);
  }

  /** The record of a key's sample: the one it carries (`snapshotRecordOf`), or the plan's. */
  recordOf(key: Key): ExecutionPlan["samples"][number] {
    return snapshotRecordOf(key) ?? this.#plan.samples[this.#sampleIndex(key)!]!;
  }

  /** Whether this invocation committed the attempt. */
  readonly isNow = (a: Key & { attempt: number }): boolean => this.isNowAt(this.#sampleIndex(a), a);

  /**
   * Whether this invocation committed the attempt, its sample's place (in the plan's samples, or
   * in the snapshot when the plan lists none) given: what a report that reads the snapshot's
   * pages beside the attempts' asks.
   */
  readonly isNowAt = (index: number | undefined, a: Key & { attempt: number }): boolean => {
    if (this.#allNow) return true;
    const first = index === undefined ? 0 : this.#firstNow[index * this.#epochs + a.epoch - 1]!;
    return first > 0 && a.attempt >= first;
  };

  /** The plan's fingerprint of a sample (the ones the outcomes count under). */
  readonly fingerprintOf = (sampleId: string): string | undefined => {
    const i = this.#ids().get(sampleId);
    return i === undefined ? undefined : this.#plan.samples[i]!.fingerprint;
  };

  /**
   * An attempt is committed; `final` when it is its key's outcome in this invocation. `key`: the
   * key object the attempt was executed for (the source's), which may know its sample's index.
   */
  attemptCommitted(attempt: Attempt, final: boolean, key: Key = attempt): void {
    const { progress } = this;
    if (!this.#allNow) {
      const slot = this.#sampleIndex(key)! * this.#epochs + attempt.epoch - 1;
      if (this.#firstNow[slot] === 0) this.#firstNow[slot] = attempt.attempt;
    }
    progress.executed++;
    addUsage(this.#spentNow, attempt.usage && boughtUsage(attempt.usage));
    progress.spentNowUsd = this.#spentNow.costUsd;
    progress.unpricedNow = this.#spentNow.unpriced;
    if (attempt.status === "scored") progress.done++;
    else if (final) progress.errored++;
    progress.elapsedMs = performance.now() - this.startedAt;
    if (this.#waitingSince !== undefined && progress.rateLimited) {
      const forMs = Math.round(performance.now() - this.#waitingSince);
      progress.rateLimited = { ...progress.rateLimited, forMs };
    }
    this.#seeOthers();
    this.#emit({ type: "attempt-committed", attempt, progress: { ...progress } });
  }

  /** Requests waiting on a rate limit now (see Progress.rateLimited); carried by the next event. */
  rateWaiting(waiting: number): void {
    const now = performance.now();
    if (waiting <= 0) this.#waitingSince = undefined;
    else this.#waitingSince ??= now;
    if (this.#waitingSince === undefined) delete this.progress.rateLimited;
    else this.progress.rateLimited = { waiting, forMs: Math.round(now - this.#waitingSince) };
  }

  /** A scoring's spend (a judge's) is this invocation's, whatever became of the key. */
  scoringCounted(scoring: Scoring): void {
    this.scorings.committed++;
    if (!scoring.usage) return;
    this.scorings.spentNow.addScoring(scoring.usage);
    addScoringUsage(this.#spentNow, scoring.usage);
    this.progress.spentNowUsd = this.#spentNow.costUsd;
    this.progress.unpricedNow = this.#spentNow.unpriced;
  }

  /** A scoring is committed as its key's outcome in this invocation. */
  scoringCommitted(scoring: Scoring): void {
    const { progress } = this;
    this.scoringCounted(scoring);
    if (scoring.status === "scored") progress.done++;
    else progress.errored++;
    progress.elapsedMs = performance.now() - this.startedAt;
    this.#emit({ type: "scoring-committed", scoring, progress: { ...progress } });
  }

  /** The index of a key's sample in the plan's samples; undefined for a sample not in it. */
  #sampleIndex(key: Key): number | undefined {
    return (
      snapshotIndexOf(key) ??
      listedKeys(this.#plan)?.sampleIndexOf(key) ??
      this.#ids().get(key.sampleId)
    );
  }

  #ids(): Map<string, number> {
    return (this.#indexOf ??= new Map(this.#plan.samples.map((r, i) => [r.sample.id, i])));
  }

  /** A worker's view of the others' progress, from the run's open keys at its latest claim. */
  #seeOthers(): void {
    const open = this.#open?.();
    if (open === undefined) return;
    const { progress } = this;
    const others = progress.total - open - progress.done - progress.errored;
    progress.others = Math.max(progress.others ?? 0, others);
  }
}
