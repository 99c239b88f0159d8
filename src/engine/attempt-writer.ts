import { addUsage, emptyUsage } from "../core/aggregate.js";
import { isStetError, StetError } from "../core/errors.js";
import type { FallbackOutcome } from "../core/events.js";
import { keyString } from "../core/keys.js";
import { boughtUsage } from "../core/usage.js";
import type { Attempt, AttemptDraft, Key, Scoring, ScoringDraft } from "../core/types.js";
import type { StepDiscard, StepDraft, Store } from "../store/types.js";
import { FallbackFile } from "./fallback-file.js";

export interface WriterOptions {
  store: Store;
  runId: string;
  token: string;
  /**
   * Where attempts go when the store stays unwritable, in the order tried (`fallbackDirs`):
   * `<dir>/<run id>.fallback.jsonl` in the first that takes them.
   */
  fallbackDirs: readonly string[];
  /** Delays between retries of a failed commit; when they run out the store is unwritable. */
  retryDelaysMs?: readonly number[];
  onRetry?: (message: string, failures: number, retryInMs: number) => void;
}

interface Pending {
  draft: AttemptDraft;
  resolve: (attempt: Attempt) => void;
  reject: (error: unknown) => void;
}

interface PendingScoring {
  draft: ScoringDraft;
  resolve: (scoring: Scoring) => void;
  reject: (error: unknown) => void;
}

interface PendingStep {
  draft: StepDraft | StepDiscard;
  resolve: () => void;
  reject: (error: unknown) => void;
}

const DEFAULT_RETRY_DELAYS = [50, 200, 500, 1_000, 2_000, 4_000];
const MAX_BATCH = 1_000;

/**
 * Write-through with group commit. Every attempt the engine finishes is queued; one commit
 * (one fsync) takes everything queued meanwhile, and each `write` resolves only once its
 * attempt is durable. Throughput comes from batching, not from weaker durability.
 *
 * A failing commit is retried with backoff. When the retries run out the writer turns
 * `failed`: the attempts it holds, and any written later, go to a JSONL fallback file (the
 * import command reads it back; see `FallbackFile` for where it goes when the store's own
 * filesystem is the one that failed) and their `write` rejects with `E_STORE_UNWRITABLE`. The
 * writer counts every attempt it was given as committed, kept in the file, or lost.
 */
export class AttemptWriter {
  #queue: Pending[] = [];
  #scorings: PendingScoring[] = [];
  #steps: PendingStep[] = [];
  #inflight: Key[] = [];
  #flushing: Promise<void> | null = null;
  /** A fence or a duplicate: the store answered, and the answer was no. */
  #verdict: StetError | null = null;
  /** Set when the store stayed unwritable: what it failed with. */
  #storeFailure: { cause: unknown } | null = null;
  readonly #committed = emptyUsage();
  readonly #kept = emptyUsage();
  readonly #lost: FallbackOutcome["lost"] = { ...emptyUsage(), keys: [] };
  readonly #fallback: FallbackFile;
  readonly #options: WriterOptions;

  constructor(options: WriterOptions) {
    this.#options = options;
    this.#fallback = new FallbackFile(options.fallbackDirs, `${options.runId}.fallback.jsonl`);
  }

  /** The error that stopped the writer, if it stopped, saying where its attempts went. */
  get failure(): StetError | null {
    if (this.#verdict) return this.#verdict;
    if (!this.#storeFailure) return null;
    return unwritableError(this.#options.store.location, this.#storeFailure.cause, this.outcome);
  }

  /** What became of the attempts this writer was given. */
  get outcome(): FallbackOutcome {
    return {
      path: this.#fallback.path,
      committed: { ...this.#committed },
      kept: { ...this.#kept },
      lost: { ...this.#lost, keys: [...this.#lost.keys] },
      refused: this.#fallback.refused,
    };
  }

  #failed(): boolean {
    return this.#verdict !== null || this.#storeFailure !== null;
  }

  /**
   * Notes a key as dispatched. The mark rides along with the next batch of attempts (one commit,
   * never a commit of its own): it only lets a later plan tell "interrupted" from "never started".
   */
  markInflight(key: Key): void {
    if (!this.#failed()) this.#inflight.push(key);
  }

  /** Resolves with the stored attempt once it is durable in the store. */
  write(draft: AttemptDraft): Promise<Attempt> {
    return new Promise((resolve, reject) => {
      const pending = { draft, resolve, reject };
      if (this.#failed()) return this.#divert([pending]);
      this.#queue.push(pending);
      this.#schedule();
    });
  }

  /**
   * Resolves with the stored scoring once it is durable, committed with others queued meanwhile.
   * A scoring is not diverted to the fallback file: when the store stays unwritable it is lost
   * (its attempt and output stand; a later rescore or resume scores it again).
   */
  writeScoring(draft: ScoringDraft): Promise<Scoring> {
    return new Promise((resolve, reject) => {
      if (this.#failed()) return reject(this.failure);
      this.#scorings.push({ draft, resolve, reject });
      this.#schedule();
    });
  }

  /**
   * Resolves once the journal entry (or a discard of a key's open entries) is durable, committed with others queued meanwhile (and
   * before the attempts queued with it: a key's steps precede its attempt). Like a scoring it is
   * not diverted: when the store stays unwritable the write rejects with the writer's failure.
   */
  writeStep(draft: StepDraft | StepDiscard): Promise<void> {
    return new Promise((resolve, reject) => {
      if (this.#failed()) return reject(this.failure);
      this.#steps.push({ draft, resolve, reject });
      this.#schedule();
    });
  }

  /** Waits until everything queued has been committed or diverted. */
  async drain(): Promise<void> {
    while (this.#flushing) await this.#flushing;
  }

  #schedule(): void {
    if (this.#flushing) return;
    this.#flushing = new Promise<void>((done) => setImmediate(done))
      .then(() => this.#flushLoop())
      .finally(() => {
        this.#flushing = null;
        if (this.#queue.length > 0 || this.#scorings.length > 0 || this.#steps.length > 0) {
          this.#schedule();
        }
      });
  }

  async #flushLoop(): Promise<void> {
    while (
      !this.#failed() &&
      (this.#queue.length > 0 || this.#scorings.length > 0 || this.#steps.length > 0)
    ) {
      // Steps commit with the attempts queued after them, in one transaction; alone when no
      // attempt is queued (an agent's steps while it works), or when more than a batch wait.
      if (this.#steps.length > 0 && (this.#queue.length === 0 || this.#steps.length > MAX_BATCH)) {
        await this.#flushSteps();
        continue;
      }
      if (this.#scorings.length > 0) await this.#flushScorings();
      if (this.#failed() || this.#queue.length === 0) continue;
      const batch = this.#queue.splice(0, MAX_BATCH);
      const steps = this.#steps.splice(0);
      // A key whose attempt commits in this batch needs no in-flight mark: the commit would
      // clear it at once.
      const finished = new Set(batch.map((p) => keyString(p.draft)));
      const marks = this.#inflight.splice(0).filter((k) => !finished.has(keyString(k)));
      try {
        const stored = await this.#commit(marks, batch, steps);
        for (const p of steps) p.resolve();
        batch.forEach((p, i) => {
          addUsage(this.#committed, p.draft.usage && boughtUsage(p.draft.usage));
          p.resolve(stored[i]!);
        });
      } catch (error) {
        this.#steps.unshift(...steps);
        this.#fail(error, batch);
      }
    }
  }

  /** Step drafts and discards, as the store takes them. */
  #stepWrites(batch: readonly PendingStep[]): { drafts: StepDraft[]; discard: StepDiscard[] } {
    const drafts: StepDraft[] = [];
    const discard: StepDiscard[] = [];
    for (const { draft } of batch) {
      if ("fromStep" in draft) discard.push(draft);
      else drafts.push(draft);
    }
    return { drafts, discard };
  }

  async #flushSteps(): Promise<void> {
    const { store, runId, token } = this.#options;
    const batch = this.#steps.splice(0, MAX_BATCH);
    try {
      const { drafts, discard } = this.#stepWrites(batch);
      await this.#retried(() => store.journal.record(runId, token, drafts, discard));
      for (const p of batch) p.resolve();
    } catch (error) {
      this.#steps.unshift(...batch);
      this.#fail(error, []);
    }
  }

  async #flushScorings(): Promise<void> {
    const { store, runId, token } = this.#options;
    const batch = this.#scorings.splice(0, MAX_BATCH);
    try {
      const drafts = batch.map((p) => p.draft);
      const stored = await this.#retried(() => store.attempts.recordScorings(runId, token, drafts));
      batch.forEach((p, i) => p.resolve(stored[i]!));
    } catch (error) {
      this.#scorings.unshift(...batch);
      this.#fail(error, []);
    }
  }

  async #commit(
    marks: readonly Key[],
    batch: Pending[],
    steps: readonly PendingStep[],
  ): Promise<Attempt[]> {
    const { store, runId, token } = this.#options;
    const drafts = batch.map((p) => p.draft);
    const extras = { inflight: marks, steps: this.#stepWrites(steps) };
    return this.#retried(() => store.attempts.record(runId, token, drafts, extras));
  }

  /** Runs a commit, retried with backoff; a fence or a duplicate is final at once. */
  async #retried<T>(commit: () => Promise<T>): Promise<T> {
    const delays = this.#options.retryDelaysMs ?? DEFAULT_RETRY_DELAYS;
    for (let failures = 0; ; failures++) {
      try {
        return await commit();
      } catch (error) {
        // A fence or a duplicate is a verdict, not a hiccup: retrying cannot change it.
        if (isStetError(error, "E_FENCED") || isStetError(error, "E_ALREADY_SCORED")) throw error;
        const delay = delays[failures];
        if (delay === undefined) throw error;
        this.#options.onRetry?.(errorMessage(error), failures + 1, delay);
        await new Promise((r) => setTimeout(r, delay));
      }
    }
  }

  #fail(error: unknown, batch: Pending[]): void {
    const scorings = this.#scorings.splice(0);
    const steps = this.#steps.splice(0);
    try {
      this.#failAttempts(error, batch);
    } finally {
      const failure = this.failure ?? error;
      for (const p of scorings) p.reject(failure);
      for (const p of steps) p.reject(failure);
    }
  }

  #failAttempts(error: unknown, batch: Pending[]): void {
    if (isStetError(error, "E_FENCED") || isStetError(error, "E_ALREADY_SCORED")) {
      this.#verdict = error;
      for (const p of [...batch, ...this.#queue.splice(0)]) p.reject(error);
      return;
    }
    this.#storeFailure = { cause: error };
    this.#divert([...batch, ...this.#queue.splice(0)]);
  }

  /** Appends attempts to the fallback file, durably, and rejects their writes. */
  #divert(pending: Pending[]): void {
    const { runId } = this.#options;
    const lines = pending.map((p) => JSON.stringify({ runId, ...p.draft }) + "\n");
    const kept = this.#fallback.append(lines);
    for (const { draft } of pending) {
      // What this invocation paid for: a replayed call's part was paid for before.
      addUsage(kept ? this.#kept : this.#lost, draft.usage && boughtUsage(draft.usage));
      if (!kept) this.#lost.keys.push({ sampleId: draft.sampleId, epoch: draft.epoch });
    }
    const failure = this.failure;
    for (const p of pending) p.reject(failure);
  }
}

/**
 * `E_STORE_UNWRITABLE`, saying where the attempts the store could not take went: the fallback
 * file, and how many could be written nowhere (with each place tried and why it refused).
 */
function unwritableError(location: string, cause: unknown, outcome: FallbackOutcome): StetError {
  const kept = outcome.kept.attempts;
  const lost = outcome.lost.attempts;
  const tried = outcome.refused.map((r) => `${r.path} (${r.message})`).join(", ");
  const said = errorMessage(cause);
  // The adapters' errors name the store already.
  const store = said.includes(location) ? "the store" : `the store (${location})`;
  const parts = [`${store} stayed unwritable: ${said}`];
  if (kept > 0) parts.push(`${kept} unsaved attempt(s) were written to ${outcome.path}`);
  if (lost > 0) parts.push(`${lost} attempt(s) could be written nowhere; refused: ${tried}`);
  return new StetError("E_STORE_UNWRITABLE", parts.join("; "), {
    cause,
    details: { fallbackPath: outcome.path, fallback: outcome },
  });
}

function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
