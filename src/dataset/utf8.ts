import { StetError } from "../core/errors.js";
import { openDatasetFile } from "./dataset-file.js";

/**
 * Decodes a dataset file's byte chunks as UTF-8, refusing what is not: a Latin-1 or UTF-16 file
 * would otherwise load with U+FFFD in place of its characters, silently. The decoder is V8's
 * (as fast as the stream's own); only when it fails is the file read again, to say where.
 * A leading byte order mark is dropped.
 *
 * @example const text = Readable.from(decodeUtf8Chunks(handle.createReadStream(), "qa.csv"));
 */
export async function* decodeUtf8Chunks(
  chunks: AsyncIterable<Uint8Array>,
  file: string,
): AsyncGenerator<string> {
  const decoder = new TextDecoder("utf-8", { fatal: true });
  let text: string;
  for await (const chunk of chunks) {
    try {
      text = decoder.decode(chunk, { stream: true });
    } catch {
      throw await notUtf8(file);
    }
    if (text !== "") yield text;
  }
  try {
    text = decoder.decode();
  } catch {
    throw await notUtf8(file);
  }
  if (text !== "") yield text;
}

/**
 * Decodes a whole dataset file's bytes as UTF-8, or throws E_DATASET naming the line and
 * column of the first byte that is not. A leading byte order mark is dropped.
 *
 * @example const text = decodeUtf8(await handle.readFile(), "qa.json");
 */
export function decodeUtf8(bytes: Uint8Array, file: string): string {
  try {
    return new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  } catch {
    const scanner = new Utf8Scanner();
    throw notUtf8Error(file, scanner.push(bytes) ?? scanner.end());
  }
}

async function notUtf8(file: string): Promise<StetError> {
  return (await findNotUtf8(file)) ?? new StetError("E_DATASET", `${file}: not UTF-8`);
}

/**
 * Reads a dataset file again to find its first byte that is not UTF-8: E_DATASET naming
 * `file:line:column`, or undefined when every byte is well-formed (a U+FFFD that the file
 * really holds). For a failure path: a JavaScript loop over the bytes, up to the bad one.
 *
 * @example const error = await findNotUtf8("qa.jsonl"); if (error) throw error;
 */
export async function findNotUtf8(file: string): Promise<StetError | undefined> {
  const handle = await openDatasetFile(file);
  const scanner = new Utf8Scanner();
  try {
    for await (const chunk of handle.createReadStream({ highWaterMark: 1 << 20 })) {
      const found = scanner.push(chunk as Buffer);
      if (found) return notUtf8Error(file, found);
    }
  } finally {
    await handle.close();
  }
  const truncated = scanner.end();
  return truncated === undefined ? undefined : notUtf8Error(file, truncated);
}

function notUtf8Error(file: string, found: InvalidByte | undefined): StetError {
  if (found === undefined) return new StetError("E_DATASET", `${file}: not UTF-8`);
  const byte =
    found.byte === undefined ? "a truncated character at the end of the file" : hex(found.byte);
  return new StetError(
    "E_DATASET",
    `${file}:${found.line}:${found.column}: not UTF-8 (${byte}); save the dataset as UTF-8`,
    { details: { line: found.line, column: found.column } },
  );
}

function hex(byte: number): string {
  return `byte 0x${byte.toString(16).toUpperCase().padStart(2, "0")}`;
}

interface InvalidByte {
  line: number;
  /** In characters (code points) from the start of the line, 1-based. */
  column: number;
  /** The byte that cannot start or continue a character; undefined at a truncated end. */
  byte: number | undefined;
}

/**
 * Finds the first byte that is not well-formed UTF-8 (RFC 3629: no overlongs, no surrogates,
 * nothing above U+10FFFF), fed chunk by chunk. A JavaScript loop over every byte: for the
 * failure path only.
 */
class Utf8Scanner {
  private line = 1;
  private column = 0;
  /** Continuation bytes the current character still needs, and the range of the next one. */
  private need = 0;
  private low = 0x80;
  private high = 0xbf;
  private lead = { byte: 0, line: 1, column: 0 };

  push(bytes: Uint8Array): InvalidByte | undefined {
    for (const byte of bytes) {
      if (this.need > 0) {
        if (byte < this.low || byte > this.high) return this.invalidLead();
        this.need -= 1;
        this.low = 0x80;
        this.high = 0xbf;
        continue;
      }
      if (byte === 0x0a) {
        this.line += 1;
        this.column = 0;
        continue;
      }
      this.column += 1;
      if (byte < 0x80) continue;
      this.lead = { byte, line: this.line, column: this.column };
      if (byte >= 0xc2 && byte <= 0xdf) this.need = 1;
      else if (byte >= 0xe0 && byte <= 0xef) {
        this.need = 2;
        if (byte === 0xe0) this.low = 0xa0;
        if (byte === 0xed) this.high = 0x9f;
      } else if (byte >= 0xf0 && byte <= 0xf4) {
        this.need = 3;
        if (byte === 0xf0) this.low = 0x90;
        if (byte === 0xf4) this.high = 0x8f;
      } else return this.invalidLead();
    }
    return undefined;
  }

  /** The end of the input: a character begun and not finished is invalid. */
  end(): InvalidByte | undefined {
    if (this.need === 0) return undefined;
    return { line: this.lead.line, column: this.lead.column, byte: undefined };
  }

  private invalidLead(): InvalidByte {
    return { line: this.lead.line, column: this.lead.column, byte: this.lead.byte };
  }
}
