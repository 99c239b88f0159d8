import { constants } from "node:buffer";
import { StetError } from "../core/errors.js";

/**
 * A file's bytes as text, its byte order mark dropped: `E_INVALID_INPUT` naming the file, its
 * size and the limit when the text is longer than one string can be here (V8's 2^29 − 24 UTF-16
 * units, ~512 MiB), with `hint` saying what to do instead.
 *
 * @example const text = textOf(bytes, "results.json", "a ResultSet is read whole", hint);
 */
export function textOf(bytes: Buffer, path: string, what: string, hint: string): string {
  return withoutBom(decode(bytes, 0, bytes.length, () => tooLong(path, bytes.length, what, hint)));
}

/**
 * A file's lines (split at `\n`, as `String.split` would: a last empty one after a final newline),
 * each decoded from `bytes` as it is reached, so no text of the whole file is made; the first
 * line's byte order mark dropped. Iterable again from the start. A line longer than one string
 * can be is `E_INVALID_INPUT` naming it.
 *
 * @example for (const line of linesOf(bytes, "results.jsonl")) ...;
 */
export function linesOf(bytes: Buffer, path: string): Iterable<string> {
  return {
    *[Symbol.iterator]() {
      let start = 0;
      for (let line = 1; ; line++) {
        const newline = bytes.indexOf(0x0a, start);
        const end = newline === -1 ? bytes.length : newline;
        const text = decode(bytes, start, end, () =>
          tooLong(`${path}:${line}`, end - start, "a line", "split it"),
        );
        yield line === 1 ? withoutBom(text) : text;
        if (newline === -1) return;
        start = newline + 1;
      }
    },
  };
}

function decode(bytes: Buffer, start: number, end: number, refusal: () => StetError): string {
  try {
    return bytes.toString("utf8", start, end);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ERR_STRING_TOO_LONG") throw refusal();
    throw error;
  }
}

function withoutBom(text: string): string {
  return text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
}

function tooLong(where: string, size: number, what: string, hint: string): StetError {
  const mib = (n: number) => `${Math.round(n / 2 ** 20).toLocaleString("en-US")} MiB`;
  return new StetError(
    "E_INVALID_INPUT",
    `${where} is ${mib(size)}: ${what} as one text, which can be at most ${constants.MAX_STRING_LENGTH.toLocaleString("en-US")} characters here; ${hint}`,
  );
}
