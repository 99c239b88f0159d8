import { appendFileSync, closeSync, fsyncSync, mkdirSync, openSync } from "node:fs";
import { dirname } from "node:path";
import { isStetError, StetError } from "../core/errors.js";
import { keyString } from "../core/keys.js";
import type { Attempt, AttemptDraft, Key } from "../core/types.js";
import type { Store } from "../store/types.js";

export interface WriterOptions {
  store: Store;
  runId: string;
  token: string;
  /** Where attempts go when the store stays unwritable. */
  fallbackPath: string;
  /** Delays between retries of a failed commit; when they run out the store is unwritable. */
  retryDelaysMs?: readonly number[];
  onRetry?: (message: string, failures: number, retryInMs: number) => void;
}

interface Pending {
  draft: AttemptDraft;
  resolve: (attempt: Attempt) => void;
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
 * import command reads it back) and their `write` rejects with `E_STORE_UNWRITABLE`.
 */
export class AttemptWriter {
  #queue: Pending[] = [];
  #inflight: Key[] = [];
  #flushing: Promise<void> | null = null;
  #failure: StetError | null = null;
  readonly #options: WriterOptions;

  constructor(options: WriterOptions) {
    this.#options = options;
  }

  /** The error that stopped the writer, if it stopped. */
  get failure(): StetError | null {
    return this.#failure;
  }

  /**
   * Notes a key as dispatched. The mark rides along with the next batch of attempts (one commit,
   * never a commit of its own): it only lets a later plan tell "interrupted" from "never started".
   */
  markInflight(key: Key): void {
    if (!this.#failure) this.#inflight.push(key);
  }

  /** Resolves with the stored attempt once it is durable in the store. */
  write(draft: AttemptDraft): Promise<Attempt> {
    return new Promise((resolve, reject) => {
      const pending = { draft, resolve, reject };
      if (this.#failure) return this.#divert([pending]);
      this.#queue.push(pending);
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
        if (this.#queue.length > 0) this.#schedule();
      });
  }

  async #flushLoop(): Promise<void> {
    while (!this.#failure && this.#queue.length > 0) {
      const batch = this.#queue.splice(0, MAX_BATCH);
      // A key whose attempt commits in this batch needs no in-flight mark: the commit would
      // clear it at once.
      const finished = new Set(batch.map((p) => keyString(p.draft)));
      const marks = this.#inflight.splice(0).filter((k) => !finished.has(keyString(k)));
      try {
        const stored = await this.#commit(marks, batch);
        batch.forEach((p, i) => p.resolve(stored[i]!));
      } catch (error) {
        this.#fail(error, batch);
      }
    }
  }

  async #commit(marks: readonly Key[], batch: Pending[]): Promise<Attempt[]> {
    const { store, runId, token } = this.#options;
    const delays = this.#options.retryDelaysMs ?? DEFAULT_RETRY_DELAYS;
    for (let failures = 0; ; failures++) {
      try {
        return await store.recordAttempts(
          runId,
          token,
          batch.map((p) => p.draft),
          marks,
        );
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
    if (isStetError(error, "E_FENCED") || isStetError(error, "E_ALREADY_SCORED")) {
      this.#failure = error;
      for (const p of [...batch, ...this.#queue.splice(0)]) p.reject(error);
      return;
    }
    this.#failure = new StetError(
      "E_STORE_UNWRITABLE",
      `the store (${this.#options.store.location}) stayed unwritable: ${errorMessage(error)}; ` +
        `unsaved attempts were written to ${this.#options.fallbackPath}`,
      { cause: error, details: { fallbackPath: this.#options.fallbackPath } },
    );
    this.#divert([...batch, ...this.#queue.splice(0)]);
  }

  /** Appends attempts to the fallback file, durably, and rejects their writes. */
  #divert(pending: Pending[]): void {
    const { fallbackPath, runId } = this.#options;
    try {
      mkdirSync(dirname(fallbackPath), { recursive: true });
      const fd = openSync(fallbackPath, "a");
      try {
        const lines = pending.map((p) => JSON.stringify({ runId, ...p.draft }) + "\n").join("");
        appendFileSync(fd, lines);
        fsyncSync(fd);
      } finally {
        closeSync(fd);
      }
    } catch (error) {
      this.#failure = new StetError(
        "E_STORE_UNWRITABLE",
        `the store stayed unwritable and the fallback file ${fallbackPath} could not be written either`,
        { cause: error },
      );
    }
    for (const p of pending) p.reject(this.#failure);
  }
}

function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
