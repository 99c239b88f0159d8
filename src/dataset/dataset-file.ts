import { open, type FileHandle } from "node:fs/promises";
import { jsonShape, mayRepeatKeys, MAX_JSON_DEPTH, type Json } from "../core/json.js";
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

/**
 * Refuses a parsed JSON text that `JSON.parse` accepted but stet must not: one nested deeper
 * than `MAX_JSON_DEPTH` levels per row (every later walk would overflow the stack), or one
 * whose object repeats a key (`JSON.parse` keeps the last value, silently). `rowDepth` is the
 * level rows are at in the text (1 for a JSONL line, 2 in a JSON array). The check is one walk
 * of the value and a count of the text's colons; only a text that may be at fault is scanned
 * (and the scanner loaded). Returns undefined when the text is fine, else a rejected promise
 * of E_DATASET naming `at(line, column)`.
 *
 * @example const problem = checkJsonText(line, value, 1, (l, c) => `qa.jsonl:3:${c}`); if (problem) await problem;
 */
export function checkJsonText(
  text: string,
  value: Json,
  rowDepth: number,
  at: (line: number, column: number) => string,
): Promise<never> | undefined {
  const maxDepth = MAX_JSON_DEPTH + rowDepth - 1;
  const shape = jsonShape(value, maxDepth);
  if (!shape.tooDeep && !mayRepeatKeys(text, shape)) return undefined;
  return (async () => {
    const { findRepeatedKey, findTooDeep } = await import("../core/json-text.js");
    const deep = shape.tooDeep ? findTooDeep(text, maxDepth) : undefined;
    if (deep) {
      throw new StetError(
        "E_DATASET",
        `nesting too deep at ${at(deep.line, deep.column)}: a row may nest arrays and objects ${MAX_JSON_DEPTH} levels deep`,
      );
    }
    const repeated = findRepeatedKey(text);
    if (repeated) {
      throw new StetError(
        "E_DATASET",
        `${at(repeated.line, repeated.column)}: duplicate key ${JSON.stringify(repeated.key)} (JSON would keep only the last value; remove or rename one)`,
        { details: { key: repeated.key, pointer: repeated.pointer } },
      );
    }
  })() as Promise<never>;
}

function describeJson(value: Json): string {
  if (Array.isArray(value)) return "an array";
  if (value === null) return "null";
  return `a ${typeof value}`;
}
