import { resolve } from "node:path";
import { StetError, thrownMessage } from "../core/errors.js";
import { contentIdFromFingerprint } from "../core/fingerprint.js";
import type { SampleRecord } from "../core/types.js";
import type { DatasetRow, DatasetSource, SampleInput } from "./types.js";
import type { LocatedRow } from "./dataset-file.js";
import { onePerPage, readRowPages, readRows } from "./read-rows.js";
import { toSampleRecord } from "./to-sample-record.js";

export interface LoadSamplesOptions<Row = DatasetRow> {
  /** Directory a relative dataset path resolves against (the eval file's). */
  baseDir: string;
  /** Maps a row whose columns are not `{ id?, input, target?, metadata? }`. */
  mapper?: (row: Row) => SampleInput;
  /** Keep only the first `limit` samples, in dataset order; the rest is not read. */
  limit?: number;
  /** The eval's name, for the messages about an inline dataset (an array or iterable). */
  evalName?: string;
  /**
   * Accept a dataset with no samples (a resume executes the run's own copy of them); by default
   * it is E_DATASET `no samples in <file>`.
   */
  allowEmpty?: boolean;
}

/**
 * Loads a dataset as samples with ids and fingerprints, in dataset order. A row without an id
 * gets one derived from its content (never its position); two rows with one id are rejected
 * with E_DUPLICATE_ID naming both. Malformed rows throw E_DATASET naming the row, as do a
 * dataset without samples and an iterable that throws (naming the eval and the row).
 *
 * @example
 * const records = await loadSamples("humaneval.jsonl", {
 *   baseDir: "/evals",
 *   mapper: (row) => ({ id: String(row.task_id), input: row.prompt ?? null }),
 * });
 * records[0]; // { sample: { id: "HumanEval/0", input: "from typing…" }, fingerprint: "…" }
 */
export async function loadSamples(
  source: string,
  options: LoadSamplesOptions<DatasetRow>,
): Promise<SampleRecord[]>;
export async function loadSamples<Row = DatasetRow>(
  source: DatasetSource<Row>,
  options: LoadSamplesOptions<Row>,
): Promise<SampleRecord[]>;
export async function loadSamples<Row = DatasetRow>(
  source: DatasetSource<Row>,
  options: LoadSamplesOptions<Row>,
): Promise<SampleRecord[]> {
  return (await loadSampleIndex(source, options)).records;
}

/** Samples as `loadSamples` loads them, and the map of them by id it checks duplicates with. */
export interface SampleIndex {
  records: SampleRecord[];
  /**
   * Every record by its sample id. A resume looks the dataset up by id: building this map again
   * took 1.1 s of a resume of 1,000,000 samples.
   */
  byId: ReadonlyMap<string, SampleRecord>;
}

/**
 * `loadSamples`, keeping the map of the records by id that it builds anyway.
 *
 * @example const { records, byId } = await loadSampleIndex("qa.jsonl", { baseDir: "." });
 */
export async function loadSampleIndex<Row = DatasetRow>(
  source: DatasetSource<Row>,
  options: LoadSamplesOptions<Row>,
): Promise<SampleIndex> {
  const { mapper, limit = Infinity } = options;
  const records: SampleRecord[] = [];
  // Per id, its record, not the row's `where` text, which cost ~90 bytes a row more while the
  // dataset loads; a duplicate's error finds the row again by the record's position.
  const seen = new Map<string, SampleRecord>();
  if (limit <= 0) return { records, byId: seen };
  const mapped = { mapped: mapper !== undefined };
  pages: for await (const page of locatedRowPages(source, options)) {
    for (const { row, where } of page) {
      const record = toSampleRecord(mapper ? mapRow(mapper, row, where) : row, where, mapped);
      const id = record.sample.id;
      const firstRecord = seen.get(id);
      if (firstRecord !== undefined) {
        // Every row read is a record (or an error), so the record's position is its row's.
        const first = await whereOfRow(source, options, records.indexOf(firstRecord));
        const derived = id === contentIdFromFingerprint(record.fingerprint);
        const why = derived ? " (neither row has an id, and their content is identical)" : "";
        throw new StetError(
          "E_DUPLICATE_ID",
          `duplicate sample id "${id}": ${first} and ${where}${why}`,
          { details: { id, rows: [first, where] } },
        );
      }
      seen.set(id, record);
      records.push(record);
      if (records.length >= limit) break pages;
    }
  }
  if (records.length === 0 && !options.allowEmpty) {
    const what =
      typeof source === "string" ? resolve(options.baseDir, source) : inlineName(options);
    throw new StetError("E_DATASET", `no samples in ${what}`);
  }
  return { records, byId: seen };
}

/**
 * A dataset file's samples a page at a time, checked row by row as `loadSamples` checks them
 * (ids, fingerprints, the mapper; `limit`; no samples at all is E_DATASET), but holding no
 * page after it is taken and no map of ids: a repeated id is left to the consumer (the store's
 * snapshot key refuses it; `whereOfRow` names the rows). What a run of a large file is created
 * from without the whole dataset in memory.
 *
 * @example for await (const page of sampleRecordPages("qa.jsonl", { baseDir })) write(page);
 */
export async function* sampleRecordPages(
  source: string,
  options: LoadSamplesOptions<DatasetRow>,
): AsyncGenerator<SampleRecord[]> {
  const { mapper, limit = Infinity } = options;
  const mapped = { mapped: mapper !== undefined };
  let count = 0;
  if (limit > 0) {
    for await (const page of readRowPages(resolve(options.baseDir, source))) {
      const records: SampleRecord[] = [];
      for (const { row, where } of page) {
        records.push(toSampleRecord(mapper ? mapRow(mapper, row, where) : row, where, mapped));
        if (++count >= limit) break;
      }
      yield records;
      if (count >= limit) break;
    }
  }
  if (count === 0 && !options.allowEmpty) {
    throw new StetError("E_DATASET", `no samples in ${resolve(options.baseDir, source)}`);
  }
}

/**
 * Where the `n`th row (from 0) of the source is: a file's is read again up to it (only a
 * duplicate id's error asks); an inline dataset's is its index, as `indexed` names it (an
 * iterable may not be iterable twice).
 */
export async function whereOfRow<Row>(
  source: DatasetSource<Row>,
  options: { baseDir: string; evalName?: string },
  n: number,
): Promise<string> {
  if (typeof source !== "string") return `dataset[${n}]`;
  let i = 0;
  for await (const { where } of locatedRows(source, options)) if (i++ === n) return where;
  throw new StetError("E_DATASET", `${resolve(options.baseDir, source)} changed while it was read`);
}

function inlineName(options: { evalName?: string }): string {
  return options.evalName === undefined
    ? "the dataset"
    : `the dataset of eval ${JSON.stringify(options.evalName)}`;
}

function mapRow<Row>(mapper: (row: Row) => SampleInput, row: Row, where: string): unknown {
  let mapped: unknown;
  try {
    mapped = mapper(row);
  } catch (cause) {
    const message = thrownMessage(cause);
    throw new StetError("E_DATASET", `${where}: sample(row) threw: ${message}`, { cause });
  }
  if (mapped === null || typeof mapped !== "object" || mapped instanceof Promise) {
    const got = mapped instanceof Promise ? "a Promise" : String(mapped);
    throw new StetError(
      "E_DATASET",
      `${where}: sample(row) returned ${got}; it must return { id?, input, target?, metadata? }`,
    );
  }
  return mapped;
}

/** `locatedRows` a page at a time: a JSONL file's many rows a page, any other source's one. */
function locatedRowPages<Row>(
  source: DatasetSource<Row>,
  options: { baseDir: string; evalName?: string },
): AsyncIterable<LocatedRow<Row>[]> {
  if (typeof source !== "string") return onePerPage(locatedRows(source, options));
  return readRowPages(resolve(options.baseDir, source)) as AsyncIterable<LocatedRow<never>[]>;
}

function locatedRows<Row>(
  source: DatasetSource<Row>,
  options: { baseDir: string; evalName?: string },
): AsyncIterable<LocatedRow<Row>> {
  if (typeof source === "string") {
    // A file's rows are JSON objects; what `Row` claims about their columns is the mapper's
    // contract with the file, which cannot be checked here.
    return readRows(resolve(options.baseDir, source)) as AsyncIterable<LocatedRow<never>>;
  }
  if (!isIterable(source) && !isAsyncIterable(source)) {
    throw new StetError(
      "E_DATASET",
      "dataset must be a file path, an array, an iterable or an async iterable",
    );
  }
  return indexed(source, options);
}

/**
 * An inline dataset's rows with `dataset[index]`. What its iterator throws (a generator reading
 * a database whose connection dropped) becomes E_DATASET naming the eval and the row it was
 * reading, rather than an unexpected error with a stack.
 */
async function* indexed<Row>(
  source: Iterable<Row> | AsyncIterable<Row>,
  options: { evalName?: string },
): AsyncGenerator<LocatedRow<Row>> {
  let index = 0;
  try {
    for await (const row of source) {
      yield { row, where: `dataset[${index}]` };
      index += 1;
    }
  } catch (cause) {
    // Only the source's own iteration throws here: the consumer's errors stay with it.
    const message = thrownMessage(cause);
    const of = options.evalName === undefined ? "" : ` of eval ${JSON.stringify(options.evalName)}`;
    throw new StetError(
      "E_DATASET",
      `the dataset${of} threw reading row ${index + 1} (dataset[${index}]): ${message}`,
      { cause },
    );
  }
}

function isIterable(value: unknown): value is Iterable<unknown> {
  return typeof (value as Iterable<unknown> | null)?.[Symbol.iterator] === "function";
}

function isAsyncIterable(value: unknown): value is AsyncIterable<unknown> {
  return typeof (value as AsyncIterable<unknown> | null)?.[Symbol.asyncIterator] === "function";
}
