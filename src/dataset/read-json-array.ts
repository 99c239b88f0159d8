import { MAX_JSON_DEPTH, type Json } from "../core/json.js";
import { lineAndColumn } from "../core/json-text.js";
import { findJsonSyntaxError } from "../core/json-syntax-error.js";
import { StetError } from "../core/errors.js";
import { asRow, checkJsonText, openDatasetFile, type LocatedRow } from "./dataset-file.js";
import { decodeUtf8 } from "./utf8.js";

/**
 * Reads the rows of a file holding one JSON array of objects.
 *
 * The file is read and parsed in one go, and only the parsed rows are kept: the text is
 * dropped when `JSON.parse` returns, and each row leaves the array as it is yielded. V8's
 * parser is several times faster than any streaming JSON parser written in JavaScript and
 * reports exact positions; datasets too big for that belong in JSONL, which streams.
 *
 * @example for await (const { row, where } of readJsonArray("qa.json")) console.log(where, row);
 */
export async function* readJsonArray(file: string): AsyncGenerator<LocatedRow> {
  const rows = await parseArrayFile(file);
  for (let index = 0; index < rows.length; index += 1) {
    const value = rows[index] ?? null;
    rows[index] = null;
    const where = `${file}[${index}]`;
    yield { row: asRow(value, where), where };
  }
}

async function parseArrayFile(file: string): Promise<Json[]> {
  const handle = await openDatasetFile(file);
  let text: string;
  try {
    text = decodeUtf8(await handle.readFile(), file);
  } finally {
    await handle.close();
  }
  let parsed: Json;
  try {
    parsed = JSON.parse(text) as Json;
  } catch (cause) {
    // Where: the first syntax error, or the first bracket too deep when that comes first (rows
    // are level 2 of the file).
    const found = findJsonSyntaxError(text, MAX_JSON_DEPTH + 1);
    if (found?.tooDeep) throw tooDeep(file, lineAndColumn(text, found.offset));
    const where = found ? `${file}:${at(lineAndColumn(text, found.offset))}` : file;
    const message = (cause as Error).message;
    throw new StetError("E_DATASET", `${where}: invalid JSON: ${message}`, { cause });
  }
  if (!Array.isArray(parsed)) {
    throw new StetError("E_DATASET", `${file}: expected a JSON array of rows`);
  }
  const problem = checkJsonText(text, parsed, 2, (line, column) => `${file}:${line}:${column}`);
  if (problem) await problem;
  return parsed;
}

function tooDeep(file: string, position: { line: number; column: number }): StetError {
  return new StetError(
    "E_DATASET",
    `nesting too deep at ${file}:${at(position)}: a row may nest arrays and objects ${MAX_JSON_DEPTH} levels deep`,
  );
}

function at(position: { line: number; column: number }): string {
  return `${position.line}:${position.column}`;
}
