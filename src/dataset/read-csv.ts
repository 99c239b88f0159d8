import { parse, type CsvError } from "csv-parse";
import { StetError } from "../core/errors.js";
import { Readable } from "node:stream";
import { openDatasetFile, type LocatedRow } from "./dataset-file.js";
import { decodeUtf8Chunks } from "./utf8.js";

/**
 * Streams the rows of a CSV file. The header row names the columns; every value is a string.
 * `where` is the line a record starts on (the header is line 1), even when a quoted value
 * spans several lines.
 *
 * @example for await (const { row, where } of readCsv("qa.csv")) console.log(where, row.input);
 */
export async function* readCsv(file: string): AsyncGenerator<LocatedRow<Record<string, string>>> {
  const handle = await openDatasetFile(file);
  const stream = handle.createReadStream();
  const text = Readable.from(decodeUtf8Chunks(stream, file));
  const parser = text.pipe(
    parse({ columns: checkHeader(file), bom: true, skip_empty_lines: true, info: true }),
  );
  text.on("error", (error) => parser.destroy(error));
  // csv-parse counts the \r and the \n of a CRLF inside a quoted value as two lines; subtract
  // those so that `where` is the line an editor shows.
  let overcount = 0;
  try {
    for await (const { record, info } of parser as AsyncIterable<CsvRecord>) {
      const { breaks, crlfs } = lineBreaksIn(record);
      overcount += crlfs;
      yield { row: record, where: `${file}:${info.lines - overcount - breaks}` };
    }
  } catch (cause) {
    if (cause instanceof StetError) throw cause;
    const line = (cause as Partial<CsvError>).lines;
    const where = typeof line === "number" ? `${file}:${line - overcount}` : file;
    throw new StetError("E_DATASET", `${where}: invalid CSV: ${(cause as Error).message}`, {
      cause,
    });
  } finally {
    parser.destroy();
    text.destroy();
    stream.destroy();
  }
}

interface CsvRecord {
  record: Record<string, string>;
  info: { lines: number };
}

function checkHeader(file: string): (header: string[]) => string[] {
  return (header) => {
    const seen = new Set<string>();
    for (const name of header) {
      if (name === "") throw new StetError("E_DATASET", `${file}:1: a CSV column has no name`);
      if (seen.has(name)) {
        throw new StetError("E_DATASET", `${file}:1: the CSV column "${name}" appears twice`);
      }
      seen.add(name);
    }
    return header;
  };
}

/** Line breaks inside a record's quoted values (a record spans `breaks + 1` lines). */
function lineBreaksIn(record: Record<string, string>): { breaks: number; crlfs: number } {
  let breaks = 0;
  let crlfs = 0;
  for (const value of Object.values(record)) {
    if (value.indexOf("\n") === -1 && value.indexOf("\r") === -1) continue;
    for (let at = 0; at < value.length; at += 1) {
      const char = value[at];
      if (char === "\r" && value[at + 1] === "\n") {
        crlfs += 1;
        breaks += 1;
        at += 1;
      } else if (char === "\n" || char === "\r") {
        breaks += 1;
      }
    }
  }
  return { breaks, crlfs };
}
