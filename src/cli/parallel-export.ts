import { availableParallelism } from "node:os";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { Worker } from "node:worker_threads";
import { StetError, type StetErrorCode } from "../core/errors.js";
import type { Run } from "../core/types.js";
import type { RunPart, Store } from "../store/types.js";
import type { Write } from "./export-output.js";
import { rowsHeader, rowTexts, type RowFormat } from "./export-rows.js";

/** Samples per part of a parallel export: two of a reader's pages of 1,000. */
const PART_SAMPLES = 2_000;
/** The fewest keys a parallel export is worth its threads' start-up for (~0.1 s each). */
const PARALLEL_MIN_KEYS = 50_000;
/** The most reader threads an export starts by default. */
const DEFAULT_MAX_THREADS = 4;

/** What a reader thread is started with (`export-worker.ts`). */
export interface ExportWorkerData {
  /** The `--store` flag as given (the thread resolves it as the command did). */
  store: string | undefined;
  runId: string;
  format: RowFormat;
}

/** To a reader thread: a part of the run to read, or the end. */
export type ToWorker = { end?: false; index: number; part: RunPart } | { end: true };

/** From a reader thread: a page's text of a part, the part's end, or why it stopped. */
export type FromWorker =
  | { index: number; text: string; done?: never; failed?: never }
  | { index: number; done: true; text?: never; failed?: never }
  | {
      failed: { code?: StetErrorCode; message: string; details?: Record<string, unknown> };
      index?: never;
    };

/**
 * How many threads read an export of `run` (`--threads`, else one per core up to four for a run of
 * `PARALLEL_MIN_KEYS` keys or more, else 1: this thread alone).
 *
 * @example exportThreads(run, undefined) // 2 on a 2-core machine for a 200,000-key run
 */
export function exportThreads(run: Run, asked: number | undefined): number {
  if (asked !== undefined) return asked;
  const keys = run.sampleCount * run.config.epochs;
  if (keys < PARALLEL_MIN_KEYS) return 1;
  return Math.min(DEFAULT_MAX_THREADS, availableParallelism());
}

/**
 * Writes the run's rows in `format` (its header, then a row per key's current outcome in key
 * order). With one thread, this one reads the run a page at a time (`rowTexts`). With more, the
 * run is cut into parts of `PART_SAMPLES` samples at the store's own sample ids (`sampleIdMark`,
 * each part's end read as it is handed out), read by `threads` reader threads (`export-worker.ts`,
 * each with its own connection to the store), every part up to the commit that was the run's
 * newest when the export began, and written here in order as the parts' pages come: the same
 * bytes as one thread writes, however many read. This thread only hands out parts and writes:
 * reading parts here too was slower (its reads held up the writes and the threads waited on the
 * part being written: 5.9–6.2 s against 5.1 s for 1,000,000 rows with one thread besides).
 * Memory holds at most `threads` parts' text (no part is handed out further ahead of the one
 * being written), however large the run.
 *
 * @example await writeRows(store, run, { name: "jsonl" }, write, { threads: 2, storeFlag });
 */
export async function writeRows(
  store: Store,
  run: Run,
  format: RowFormat,
  write: Write,
  options: { threads: number; storeFlag: string | undefined },
): Promise<void> {
  const header = rowsHeader(format);
  if (header !== "") await write(header);
  const threads = Math.min(options.threads, Math.ceil(run.sampleCount / PART_SAMPLES));
  if (threads <= 1) {
    for await (const text of rowTexts(store, run.id, format)) await write(text);
    return;
  }
  const { cursor: upTo } = await store.reads.listAttemptsAfter(run.id);
  const writer = new PartWriter(upTo, (after) =>
    store.reads.sampleIdMark(run.id, after, PART_SAMPLES),
  );
  const data: ExportWorkerData = { store: options.storeFlag, runId: run.id, format };
  for (let i = 0; i < threads; i++) writer.add(new ThreadReader(writer, data));
  await writer.write(write);
}

/** A part's pages as they arrive, and whether its reader finished it. */
interface Arrived {
  pieces: string[];
  done: boolean;
}

/**
 * The readers of one export and the parts they read: each idle reader is given the next part
 * (its end read then) while fewer than as many parts as there are readers are out from the one
 * being written on; the parts' pages are written in part order.
 */
class PartWriter {
  readonly #readers: ThreadReader[] = [];
  readonly #idle: ThreadReader[] = [];
  readonly #arrived = new Map<number, Arrived>();
  readonly #upTo: number;
  readonly #ends: (after: string) => Promise<string | undefined>;
  /** Where the next part starts; undefined once the last part (to the run's end) is handed out. */
  #after: string | undefined = "";
  #next = 0;
  #head = 0;
  #failure: Error | undefined;
  #wake: (() => void) | undefined;

  constructor(upTo: number, ends: (after: string) => Promise<string | undefined>) {
    this.#upTo = upTo;
    this.#ends = ends;
  }

  add(reader: ThreadReader): void {
    this.#readers.push(reader);
    this.#idle.push(reader);
  }

  async write(write: Write): Promise<void> {
    let written = false;
    try {
      for (;;) {
        if (this.#failure) throw this.#failure;
        await this.#handOut();
        const arrived = this.#arrived.get(this.#head);
        if (arrived === undefined) break; // every part handed out was written
        const piece = arrived.pieces.shift();
        if (piece !== undefined) {
          await write(piece);
        } else if (arrived.done) {
          this.#arrived.delete(this.#head++);
        } else {
          await new Promise<void>((resolve) => (this.#wake = resolve));
        }
      }
      written = true;
    } finally {
      await Promise.all(this.#readers.map((reader) => reader.close(!written)));
    }
  }

  page(index: number, text: string): void {
    this.#arrived.get(index)!.pieces.push(text);
    this.#wakeUp();
  }

  done(reader: ThreadReader, index: number): void {
    this.#arrived.get(index)!.done = true;
    this.#idle.push(reader);
    this.#wakeUp();
  }

  fail(error: Error): void {
    this.#failure ??= error;
    this.#wakeUp();
  }

  /** Hands idle readers the next parts, no more out than there are readers. */
  async #handOut(): Promise<void> {
    while (this.#idle.length > 0 && this.#after !== undefined) {
      if (this.#next >= this.#head + this.#readers.length) return;
      const afterSampleId = this.#after;
      const lastSampleId = await this.#ends(afterSampleId);
      this.#after = lastSampleId;
      const index = this.#next++;
      this.#arrived.set(index, { pieces: [], done: false });
      const part: RunPart = { afterSampleId, upTo: this.#upTo };
      if (lastSampleId !== undefined) part.lastSampleId = lastSampleId;
      this.#idle.shift()!.read(index, part);
    }
  }

  #wakeUp(): void {
    const wake = this.#wake;
    this.#wake = undefined;
    wake?.();
  }
}

/** Parts read by a thread of their own (`export-worker.ts`) with its own store connection. */
class ThreadReader {
  readonly #worker: Worker;
  readonly #exited: Promise<unknown>;
  #closing = false;

  constructor(writer: PartWriter, data: ExportWorkerData) {
    const dist = join(dirname(createRequire(import.meta.url).resolve("stet/package.json")), "dist");
    this.#worker = new Worker(join(dist, "cli", "export-worker.js"), { workerData: data });
    this.#worker.on("message", (message: FromWorker) => {
      if (message.failed) {
        const { code, message: text, details } = message.failed;
        writer.fail(code ? new StetError(code, text, details ? { details } : {}) : new Error(text));
      } else if (message.done) {
        writer.done(this, message.index);
      } else {
        writer.page(message.index, message.text);
      }
    });
    this.#exited = new Promise((resolve) => this.#worker.once("exit", resolve));
    this.#worker.on("error", (error) => writer.fail(error));
    this.#worker.on("exit", (code) => {
      if (code !== 0 || !this.#closing) {
        writer.fail(new Error(`an export reader thread stopped before the export ended (${code})`));
      }
    });
  }

  read(index: number, part: RunPart): void {
    this.#worker.postMessage({ index, part } satisfies ToWorker);
  }

  /** Asks the thread to close its store and leave once its part is read; stops it with `now`. */
  async close(now: boolean): Promise<void> {
    this.#closing = true;
    this.#worker.postMessage({ end: true } satisfies ToWorker);
    const timer = setTimeout(() => void this.#worker.terminate(), now ? 0 : 10_000);
    await this.#exited;
    clearTimeout(timer);
  }
}
