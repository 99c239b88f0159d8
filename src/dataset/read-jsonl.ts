import type { DatasetRow } from "./types.js";
import {
  asRow,
  checkJsonText,
  openDatasetFile,
  parseJson,
  type LocatedRow,
} from "./dataset-file.js";
import { findNotUtf8 } from "./utf8.js";

/**
 * Streams the rows of a JSONL file, one object per line; blank lines are skipped. The file must
 * be UTF-8 (a byte order mark is dropped); a row nested too deep or with a repeated key is
 * refused, naming `file:line:column`.
 *
 * @example for await (const { row, where } of readJsonl("qa.jsonl")) console.log(where, row);
 */
export async function* readJsonl(file: string): AsyncGenerator<LocatedRow> {
  for await (const page of readJsonlPages(file)) yield* page;
}

/**
 * `readJsonl`'s rows a page at a time (the lines of up to 1 MiB of the file): a reader of a
 * million rows awaits some fifty times instead of a million (0.4 µs a row through readline and
 * two async iterators). A bad line ends the page before it and throws only when the next page is
 * asked for, so that a reader checking each row as it goes still meets the file's first problem
 * first, and a reader that stops early (a `limit`) never meets a problem after where it stopped.
 *
 * @example for await (const page of readJsonlPages("qa.jsonl")) rows.push(...page);
 */
export async function* readJsonlPages(file: string): AsyncGenerator<LocatedRow[]> {
  const handle = await openDatasetFile(file);
  const stream = handle.createReadStream({ encoding: "utf8", highWaterMark: 1 << 20 });
  let lineNumber = 0;
  // Node's decoder turns a byte that is not UTF-8 into U+FFFD: a line holding one sends us back
  // to the bytes (once: a file whose bytes are all well-formed holds a real U+FFFD). A stricter
  // decoder in the stream measured ~25 MB more at the peak of a 100,000-row CLI run.
  let bytesChecked = false;
  try {
    for await (const lines of lineBatches(stream as AsyncIterable<string>)) {
      let page: LocatedRow[] = [];
      for (const line of lines) {
        lineNumber += 1;
        const text = lineNumber === 1 && line.startsWith("\uFEFF") ? line.slice(1) : line;
        if (text.trim() === "") continue;
        const where = `${file}:${lineNumber}`;
        const suspect = !bytesChecked && text.includes("\uFFFD");
        const row = suspect ? undefined : parseLine(text, where);
        if (row !== undefined && !(row instanceof Failure)) {
          if (page.push({ row, where }) < PAGE_ROWS) continue;
          yield page;
          page = [];
          continue;
        }
        // The rows before it are taken first (see above).
        if (page.length > 0) yield page;
        page = [];
        if (row instanceof Failure) return await row.problem;
        const notUtf8 = await findNotUtf8(file);
        if (notUtf8) throw notUtf8;
        bytesChecked = true;
        const checked = parseLine(text, where);
        if (checked instanceof Failure) return await checked.problem;
        page.push({ row: checked, where });
      }
      if (page.length > 0) yield page;
    }
  } finally {
    // The stream stays open when the consumer stops early (e.g. `limit`).
    stream.destroy();
  }
}

/**
 * The most rows a page holds. A page's parsed rows live until it is taken, and rows that outlive
 * a young-generation GC are promoted: pages of a whole 1 MiB chunk (~18,000 rows) added ~17 MB to
 * the peak RSS of loading 200,000 rows.
 */
const PAGE_ROWS = 512;

/** A text's lines a chunk at a time; the last line, without a line break, on its own. */
async function* lineBatches(chunks: AsyncIterable<string>): AsyncGenerator<string[]> {
  const splitter = new LineSplitter();
  for await (const chunk of chunks) yield splitter.split(chunk);
  const last = splitter.end();
  if (last !== undefined) yield [last];
}

/**
 * What is wrong with a line: its error, thrown when `problem` is awaited, after the rows before
 * it. The rejection is handled from the start, so that a reader who stops before it leaves no
 * unhandled rejection behind.
 */
class Failure {
  constructor(readonly problem: Promise<never>) {
    problem.catch(() => undefined);
  }
}

/**
 * A line's row, or its failure: invalid JSON, not an object, nested too deep, a repeated key
 * (the last two found by `checkJsonText`, asynchronously: the scanner that says where loads then).
 */
function parseLine(text: string, where: string): DatasetRow | Failure {
  let row: DatasetRow;
  try {
    row = asRow(parseJson(text, where), where);
  } catch (error) {
    return new Failure(Promise.reject(error as Error));
  }
  const problem = checkJsonText(text, row, 1, (_, column) => `${where}:${column}`);
  return problem === undefined ? row : new Failure(problem);
}

/**
 * Splits a text arriving in chunks into lines as `node:readline` does (with `crlfDelay:
 * Infinity`): a line ends at `\n`, `\r\n` or a lone `\r`, a `\r\n` split between two chunks
 * included; what follows the last line break is the last line (`end`). readline delivered a
 * line per event through an async iterator: this hands over a chunk's lines at once.
 */
export class LineSplitter {
  private rest = "";
  private afterReturn = false;

  /** The lines that `chunk` completes, in order. */
  split(chunk: string): string[] {
    let text = this.rest + chunk;
    if (this.afterReturn && text.charCodeAt(0) === 10) text = text.slice(1);
    this.afterReturn = false;
    const lines: string[] = [];
    let start = 0;
    if (text.indexOf("\r") === -1) {
      for (let end = text.indexOf("\n"); end !== -1; end = text.indexOf("\n", start)) {
        lines.push(text.slice(start, end));
        start = end + 1;
      }
    } else {
      const breaks = /\r\n|\r|\n/g;
      for (let found = breaks.exec(text); found !== null; found = breaks.exec(text)) {
        // A `\r` ending the chunk may be the first half of a `\r\n`.
        if (found[0] === "\r" && found.index === text.length - 1) this.afterReturn = true;
        lines.push(text.slice(start, found.index));
        start = found.index + found[0].length;
      }
    }
    this.rest = text.slice(start);
    return lines;
  }

  /** The text after the last line break, if any. */
  end(): string | undefined {
    const rest = this.rest;
    this.rest = "";
    return rest === "" ? undefined : rest;
  }
}
