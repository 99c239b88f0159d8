import { createHash, randomBytes } from "node:crypto";
import {
  customIdOf,
  type BatchCall,
  type BatchChannel,
  type BatchClient,
  type BatchLine,
  type BatchOptions,
  type BatchResult,
} from "../core/batch.js";
import { keyString } from "../core/keys.js";
import type { Key } from "../core/types.js";
import type { BatchSubmission, Store } from "../store/types.js";
import { collectBatch, type BatchEvents } from "./batch-collect.js";

/** A result a key keeps: what it succeeded with or failed with inside a batch. */
type Final = BatchResult & { kind: "succeeded" | "errored" };

interface Waiter {
  key: Key;
  hash: string;
  call: BatchCall;
  resolve: (result: BatchResult) => void;
  reject: (error: unknown) => void;
}

export interface BrokerParts {
  store: Store;
  runId: string;
  settings: Required<BatchOptions>;
  /** How many keys this execution dispatches: once each is waiting or ended, a batch goes. */
  expected: number;
  /**
   * Whether more keys may still be dispatched: false once the execution stopped (a spend cap, a
   * signal) or while a spend cap's first key goes alone; then only the keys started count.
   */
  dispatching: () => boolean;
  /** Whether a spend cap's first key goes alone for now (the rest may follow). */
  probing?: () => boolean;
  /** The execution's immediate stop: polling ends, waiting keys are abandoned. */
  abort: AbortSignal;
  events?: BatchEvents;
  /** Milliseconds without a new call before what waits is submitted anyway. Default 5000. */
  lingerMs?: number;
  /**
   * `--detach`: called once, when every key of the execution is either ended or waiting on a
   * batch a look found running at the provider (its id recorded), and none is still to come: the
   * execution may stop and leave the batches to a later resume. `batches` is how many.
   */
  detached?: (batches: number) => void;
}

/**
 * The provider batches of one execution (`--batch`). Keys hand their model call over
 * (`channel(key).send`) and wait. A batch is submitted once every dispatched key is waiting or
 * ended (or `maxRequests` wait): first recorded in the store with a fresh nonce and its keys,
 * then created with the nonce (`collectBatch`). A key whose call is in a submission recorded by
 * an earlier execution (same key, same request) adopts it: the batch is found by its id, or by
 * its nonce at the provider when a kill lost the id, and its results are downloaded, never bought
 * again. An expired or missing result goes in a new batch; a failed one is the key's error.
 *
 * @example const broker = await BatchBroker.open(parts); ctx.batch = broker.channel(key);
 */
export class BatchBroker {
  readonly #parts: BrokerParts;
  /** Earlier submissions' keys: `keyString + request hash` → submission and custom id. */
  readonly #adoptable = new Map<string, { submission: BatchSubmission; customId: string }>();
  readonly #collecting = new Map<string, Promise<Map<string, BatchResult>>>();
  #queue: Waiter[] = [];
  readonly #waiting = new Set<string>();
  #ended = 0;
  #timer: NodeJS.Timeout | undefined;
  #checking = false;
  readonly #open = new Map<string, { client: BatchClient; batchId: string }>();
  #started = 0;
  /** Waiting keys whose batch a look found running at the provider, by key, with its nonce. */
  readonly #parked = new Map<string, string>();
  /** Who waits to be parked on each submission's batch, by nonce, until a look finds it running. */
  readonly #parkers = new Map<string, Array<() => void>>();
  /** Nonces of the submissions whose batch a look found running at the provider. */
  readonly #seenRunning = new Set<string>();
  #detached = false;

  private constructor(parts: BrokerParts) {
    this.#parts = parts;
  }

  /** The broker of an execution, with the run's earlier submissions ready to adopt. */
  static async open(parts: BrokerParts): Promise<BatchBroker> {
    const broker = new BatchBroker(parts);
    for (const submission of await parts.store.batches.list(parts.runId)) {
      if (submission.status === "abandoned" || submission.status === "failed") continue;
      for (const k of submission.keys) {
        const slot = `${keyString(k)}\n${k.request}`;
        broker.#adoptable.set(slot, { submission, customId: k.customId });
      }
    }
    return broker;
  }

  /** A key's way in (`ctx.batch`). */
  channel(key: Key): BatchChannel {
    return { send: (call, signal) => this.#send(key, call, signal) };
  }

  /**
   * Cancels the batches still running at the provider (`stet cancel`): what finished in them is
   * kept (the provider ends them with the results so far); a request that never ran is its key's
   * error. A cancel the provider refuses leaves its batch to end as it would have.
   */
  async cancelOpen(): Promise<void> {
    const open = [...this.#open.values()];
    await Promise.all(open.map(({ client, batchId }) => client.cancel(batchId).catch(() => {})));
  }

  /** A key was dispatched. */
  keyStarted(): void {
    this.#started++;
  }

  /** A key's execution ended (committed, or abandoned): the batch may not wait for it. */
  keyEnded(): void {
    this.#ended++;
    this.#check();
  }

  async #send(key: Key, call: BatchCall, signal: AbortSignal): Promise<Final> {
    const name = keyString(key);
    const hash = createHash("sha256").update(JSON.stringify(call.body)).digest("hex");
    this.#waiting.add(name);
    try {
      const adopted = this.#adoptable.get(`${name}\n${hash}`);
      if (adopted) {
        this.#adoptable.delete(`${name}\n${hash}`);
        this.#whenRunning(adopted.submission.nonce, () =>
          this.#park(name, adopted.submission.nonce),
        );
        const results = await untilAborted(this.#collect(adopted.submission, call.client), signal);
        const result = results.get(adopted.customId);
        if (result?.kind === "succeeded" || result?.kind === "errored") return result;
      }
      for (;;) {
        this.#parked.delete(name);
        const result = await this.#enqueue({ key, hash, call }, signal);
        if (result.kind === "succeeded" || result.kind === "errored") return result;
        if (result.kind === "cancelled") {
          return {
            kind: "errored",
            message: "the provider's batch was cancelled before this request ran",
          };
        }
        // Expired with the batch window (or missing from its results): in the next batch.
      }
    } finally {
      this.#waiting.delete(name);
      this.#parked.delete(name);
      this.#check();
    }
  }

  /** Runs `then` once a look finds the batch of submission `nonce` running at the provider. */
  #whenRunning(nonce: string, then: () => void): void {
    if (this.#seenRunning.has(nonce)) return then();
    const waiting = this.#parkers.get(nonce) ?? [];
    waiting.push(then);
    this.#parkers.set(nonce, waiting);
  }

  /** The batch of `nonce` runs at the provider: who waits on it is parked there. */
  #batchRunning(nonce: string): void {
    this.#seenRunning.add(nonce);
    for (const then of this.#parkers.get(nonce) ?? []) then();
    this.#parkers.delete(nonce);
  }

  #park(name: string, nonce: string): void {
    if (!this.#waiting.has(name)) return;
    this.#parked.set(name, nonce);
    this.#check();
  }

  #enqueue(w: Omit<Waiter, "resolve" | "reject">, signal: AbortSignal): Promise<BatchResult> {
    return new Promise<BatchResult>((resolve, reject) => {
      const waiter: Waiter = { ...w, resolve, reject };
      const onAbort = () => {
        // Not yet submitted: it leaves the queue. Submitted: the batch goes on, a resume adopts it.
        this.#queue = this.#queue.filter((q) => q !== waiter);
        reject(signal.reason);
      };
      if (signal.aborted) return onAbort();
      signal.addEventListener("abort", onAbort, { once: true });
      const done = () => signal.removeEventListener("abort", onAbort);
      waiter.resolve = (r) => (done(), resolve(r));
      waiter.reject = (e) => (done(), reject(e));
      this.#queue.push(waiter);
      this.#check();
    });
  }

  /**
   * Submits what waits once nothing else is coming (or a batch is full); else waits a little.
   * Looked at once the current turn's continuations ran: keys that one batch's results sent
   * back to the queue all arrive in the same turn, and go out together.
   */
  #check(): void {
    if (this.#checking) return;
    this.#checking = true;
    setImmediate(() => {
      this.#checking = false;
      this.#decide();
    });
  }

  #decide(): void {
    const { settings, expected, dispatching } = this.#parts;
    const coming = dispatching() ? expected : this.#started;
    const outstanding = coming - this.#ended - this.#waiting.size;
    this.#maybeDetach(outstanding);
    if (this.#queue.length === 0) return;
    clearTimeout(this.#timer);
    if (this.#queue.length >= settings.maxRequests || outstanding <= 0) {
      this.#submit();
      return;
    }
    this.#timer = setTimeout(() => this.#submit(), this.#parts.lingerMs ?? 5_000);
    this.#timer.unref();
  }

  /**
   * `--detach`: once nothing is queued or to come and every waiting key's batch runs, the
   * execution is told it may stop (once). A spend cap's probe (its first key alone) is not the end
   * of the dispatching: the rest are still to come.
   */
  #maybeDetach(outstanding: number): void {
    const detached = this.#parts.detached;
    if (!detached || this.#detached || this.#queue.length > 0 || outstanding > 0) return;
    const more = this.#parts.dispatching() || this.#parts.probing?.() === true;
    if (more && this.#started < this.#parts.expected) return;
    if (this.#waiting.size === 0 || this.#parked.size < this.#waiting.size) return;
    this.#detached = true;
    detached(new Set(this.#parked.values()).size);
  }

  #submit(): void {
    const [first] = this.#queue;
    if (!first || this.#parts.abort.aborted) return;
    const group = first.call.client.group;
    const taken: Waiter[] = [];
    const rest: Waiter[] = [];
    for (const w of this.#queue) {
      if (w.call.client.group === group && taken.length < this.#parts.settings.maxRequests) {
        taken.push(w);
      } else rest.push(w);
    }
    this.#queue = rest;
    void this.#submitBatch(taken).finally(() => this.#check());
  }

  async #submitBatch(waiters: Waiter[]): Promise<void> {
    const { store, runId } = this.#parts;
    const client = waiters[0]!.call.client;
    const nonce = `stet${randomBytes(8).toString("hex")}`;
    const lines: BatchLine[] = waiters.map((w, i) => ({
      customId: customIdOf(nonce, i),
      body: w.call.body,
    }));
    const submission: BatchSubmission = {
      nonce,
      runId,
      provider: client.provider,
      endpoint: client.endpoint,
      keys: waiters.map((w, i) => ({
        sampleId: w.key.sampleId,
        epoch: w.key.epoch,
        customId: lines[i]!.customId,
        request: w.hash,
      })),
      batchId: null,
      status: "recorded",
      note: null,
      createdAt: new Date().toISOString(),
      updatedAt: "",
    };
    try {
      // Recorded before the provider is asked: a kill from here on leaves what a resume adopts.
      const { batchId: _b, status: _s, note: _n, updatedAt: _u, ...recorded } = submission;
      await store.batches.record(recorded);
      this.#whenRunning(nonce, () => {
        for (const w of waiters) this.#park(keyString(w.key), nonce);
      });
      const results = await this.#collect(submission, client, lines);
      for (const [i, w] of waiters.entries()) {
        w.resolve(results.get(lines[i]!.customId) ?? { kind: "expired" });
      }
    } catch (error) {
      for (const w of waiters) w.reject(error);
    }
  }

  /** A submission's results, collected once however many keys ask. */
  #collect(
    submission: BatchSubmission,
    client: BatchClient,
    lines?: readonly BatchLine[],
  ): Promise<Map<string, BatchResult>> {
    let collecting = this.#collecting.get(submission.nonce);
    if (!collecting) {
      collecting = collectBatch({
        store: this.#parts.store,
        submission,
        client,
        lines,
        settings: this.#parts.settings,
        abort: this.#parts.abort,
        events: this.#parts.events,
        open: this.#open,
        running: () => this.#batchRunning(submission.nonce),
      });
      this.#collecting.set(submission.nonce, collecting);
    }
    return collecting;
  }
}

function untilAborted<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });
    promise.then(
      (value) => (signal.removeEventListener("abort", onAbort), resolve(value)),
      (error: unknown) => (signal.removeEventListener("abort", onAbort), reject(error)),
    );
  });
}
