import { visit } from "jsonc-parser";
import { MAX_JSON_DEPTH, type Json } from "../core/json.js";
import { findTooDeep, type TextPosition } from "../core/json-text.js";
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
    // The locating scanner recurses per level: a text too deep is refused as such first.
    const deep = findTooDeep(text, MAX_JSON_DEPTH + 1);
    if (deep) throw tooDeep(file, deep);
    const message = (cause as Error).message;
    throw new StetError("E_DATASET", `${locate(file, text)}: invalid JSON: ${message}`, {
      cause,
    });
  }
  if (!Array.isArray(parsed)) {
    throw new StetError("E_DATASET", `${file}: expected a JSON array of rows`);
  }
  const problem = checkJsonText(text, parsed, 2, (line, column) => `${file}:${line}:${column}`);
  if (problem) await problem;
  return parsed;
}

function tooDeep(file: string, at: TextPosition): StetError {
  return new StetError(
    "E_DATASET",
    `nesting too deep at ${file}:${at.line}:${at.column}: a row may nest arrays and objects ${MAX_JSON_DEPTH} levels deep`,
  );
}

/**
 * `file:line:column` of the first syntax error. V8's messages carry no position for the most
 * common mistakes ("Unexpected token"), so the text is scanned again, on this failure path only.
 */
function locate(file: string, text: string): string {
  let where = file;
  visit(
    text,
    {
      onError: (_error, _offset, _length, line, column) => {
        if (where === file) where = `${file}:${line + 1}:${column + 1}`;
      },
    },
    { disallowComments: true, allowTrailingComma: false },
  );
  return where;
}
