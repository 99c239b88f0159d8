import { open, type FileHandle } from "node:fs/promises";
import type { Json } from "../core/json.js";
import { StetError } from "../core/errors.js";
import type { DatasetRow } from "./types.js";

/** A dataset row and where it came from: `file:line`, `file[index]` or `dataset[index]`. */
export interface LocatedRow<Row = DatasetRow> {
  row: Row;
  where: string;
}

/**
 * Opens a dataset file for reading, turning a missing or unreadable file into E_DATASET.
 *
 * @example const handle = await openDatasetFile("/data/qa.jsonl");
 */
export async function openDatasetFile(file: string): Promise<FileHandle> {
  let handle: FileHandle;
  try {
    handle = await open(file, "r");
  } catch (cause) {
    const reason = (cause as NodeJS.ErrnoException).code === "ENOENT" ? "not found" : "unreadable";
    throw new StetError("E_DATASET", `dataset file ${reason}: ${file}`, { cause });
  }
  if (!(await handle.stat()).isFile()) {
    await handle.close();
    throw new StetError("E_DATASET", `dataset path is not a file: ${file}`);
  }
  return handle;
}

/**
 * Checks that a parsed JSON value is an object, the only shape a row can have.
 *
 * @example asRow(JSON.parse(line), "qa.jsonl:3") // throws E_DATASET for `[1, 2]`
 */
export function asRow(value: Json, where: string): DatasetRow {
  if (value !== null && typeof value === "object" && !Array.isArray(value)) return value;
  throw new StetError(
    "E_DATASET",
    `${where}: a row must be a JSON object, got ${describeJson(value)}`,
  );
}

/**
 * Parses one JSON text, naming where it came from when it is malformed.
 *
 * @example parseJson('{"input": "hi"}', "qa.jsonl:1")
 */
export function parseJson(text: string, where: string): Json {
  try {
    return JSON.parse(text) as Json;
  } catch (cause) {
    throw new StetError("E_DATASET", `${where}: invalid JSON: ${(cause as Error).message}`, {
      cause,
    });
  }
}

function describeJson(value: Json): string {
  if (Array.isArray(value)) return "an array";
  if (value === null) return "null";
  return `a ${typeof value}`;
}
