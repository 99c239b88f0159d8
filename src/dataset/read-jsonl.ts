import { createInterface } from "node:readline";
import { asRow, openDatasetFile, parseJson, type LocatedRow } from "./dataset-file.js";

/**
 * Streams the rows of a JSONL file, one object per line; blank lines are skipped.
 *
 * @example for await (const { row, where } of readJsonl("qa.jsonl")) console.log(where, row);
 */
export async function* readJsonl(file: string): AsyncGenerator<LocatedRow> {
  const handle = await openDatasetFile(file);
  const stream = handle.createReadStream({ encoding: "utf8", highWaterMark: 1 << 20 });
  const lines = createInterface({ input: stream, crlfDelay: Infinity });
  let lineNumber = 0;
  try {
    for await (const line of lines) {
      lineNumber += 1;
      const text = lineNumber === 1 && line.startsWith("\uFEFF") ? line.slice(1) : line;
      if (text.trim() === "") continue;
      const where = `${file}:${lineNumber}`;
      yield { row: asRow(parseJson(text, where), where), where };
    }
  } finally {
    // readline leaves its input open when the consumer stops early (e.g. `limit`).
    lines.close();
    stream.destroy();
  }
}
