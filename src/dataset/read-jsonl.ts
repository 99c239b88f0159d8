import { createInterface } from "node:readline";
import { Readable } from "node:stream";
import {
  asRow,
  checkJsonText,
  openDatasetFile,
  parseJson,
  type LocatedRow,
} from "./dataset-file.js";
import { decodeUtf8Chunks } from "./utf8.js";

/**
 * Streams the rows of a JSONL file, one object per line; blank lines are skipped. The file must
 * be UTF-8 (a byte order mark is dropped); a row nested too deep or with a repeated key is
 * refused, naming `file:line:column`.
 *
 * @example for await (const { row, where } of readJsonl("qa.jsonl")) console.log(where, row);
 */
export async function* readJsonl(file: string): AsyncGenerator<LocatedRow> {
  const handle = await openDatasetFile(file);
  const stream = handle.createReadStream({ highWaterMark: 1 << 20 });
  const text = Readable.from(decodeUtf8Chunks(stream, file));
  const lines = createInterface({ input: text, crlfDelay: Infinity });
  let lineNumber = 0;
  try {
    for await (const line of lines) {
      lineNumber += 1;
      if (line.trim() === "") continue;
      const where = `${file}:${lineNumber}`;
      const row = asRow(parseJson(line, where), where);
      const problem = checkJsonText(line, row, 1, (_, column) => `${where}:${column}`);
      if (problem) await problem;
      yield { row, where };
    }
  } finally {
    // readline leaves its input open when the consumer stops early (e.g. `limit`).
    lines.close();
    text.destroy();
    stream.destroy();
  }
}
