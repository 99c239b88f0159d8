import { extname } from "node:path";
import { StetError } from "../core/errors.js";
import type { LocatedRow } from "./dataset-file.js";
import { readJsonl, readJsonlPages } from "./read-jsonl.js";

// The CSV and JSON-array readers (and the parsers under them) load with their format only: a
// JSONL dataset starts without them.
const readers: Record<string, (file: string) => AsyncIterable<LocatedRow>> = {
  ".jsonl": readJsonl,
  ".ndjson": readJsonl,
  ".json": (file) => loaded(async () => (await import("./read-json-array.js")).readJsonArray(file)),
  ".csv": (file) => loaded(async () => (await import("./read-csv.js")).readCsv(file)),
};

async function* loaded(load: () => Promise<AsyncIterable<LocatedRow>>): AsyncIterable<LocatedRow> {
  yield* await load();
}

/**
 * Streams the rows of a dataset file, choosing the format from the extension: `.jsonl` /
 * `.ndjson` (one object per line), `.json` (an array of objects) or `.csv` (header row, string
 * values). Malformed input throws E_DATASET naming `file:line` (or `file[index]`).
 *
 * @example
 * for await (const { row, where } of readRows("/data/qa.jsonl")) {
 *   console.log(where, row.input); // "/data/qa.jsonl:1" "What is 2+2?"
 * }
 */
export function readRows(file: string): AsyncIterable<LocatedRow> {
  const extension = extname(file).toLowerCase();
  const reader = readers[extension];
  if (reader === undefined) {
    throw new StetError(
      "E_DATASET",
      `unsupported dataset file ${file}: expected .jsonl, .ndjson, .json or .csv`,
    );
  }
  return reader(file);
}

/**
 * `readRows`' rows a page at a time: a JSONL file's a chunk of the file at a time (see
 * `readJsonlPages`), the other formats' one row a page.
 *
 * @example for await (const page of readRowPages("/data/qa.jsonl")) count += page.length;
 */
export function readRowPages(file: string): AsyncIterable<LocatedRow[]> {
  const extension = extname(file).toLowerCase();
  if (extension === ".jsonl" || extension === ".ndjson") return readJsonlPages(file);
  return onePerPage(readRows(file));
}

/** Each row of `rows` as a page of its own. */
export async function* onePerPage<T>(rows: AsyncIterable<T>): AsyncGenerator<T[]> {
  for await (const row of rows) yield [row];
}
