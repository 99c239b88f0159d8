import { closeSync, existsSync, fsyncSync, openSync, readSync, writeSync } from "node:fs";
import { StetError } from "../core/errors.js";
import { formatValidationError } from "./format-validation-error.js";
import type { EvalPortResult } from "./result-set-types.js";
import { validateJsonLines } from "./validate-json-lines.js";
import { isObject } from "./validation-types.js";

/**
 * An append-only Results JSONL file. Every `write` is one write of whole lines followed by
 * fsync, so a process killed at any moment leaves at worst a torn last line. Synchronous on
 * purpose: a line is durable before `write` returns. It holds no line in memory: the file is
 * written whole once (`createResultStream` writes its back-fill atomically) and then only
 * appended to, each key once by construction (an invocation commits a key's scored attempt once).
 */
export class ResultLog {
  private constructor(
    readonly path: string,
    private fd: number | undefined,
  ) {}

  /**
   * Opens `path` (created when missing) to append to its end.
   *
   * @example const log = ResultLog.append("results.jsonl"); log.write(results); log.close();
   */
  static append(path: string): ResultLog {
    const fd = openSync(path, "a");
    fsyncSync(fd);
    return new ResultLog(path, fd);
  }

  /** Appends `results` as one write, then fsyncs. Returns how many lines were written. */
  write(results: readonly EvalPortResult[]): number {
    if (this.fd === undefined) throw new Error(`${this.path} is closed`);
    if (results.length === 0) return 0;
    const bytes = Buffer.from(resultLines(results));
    for (let offset = 0; offset < bytes.length;) {
      offset += writeSync(this.fd, bytes, offset, bytes.length - offset);
    }
    fsyncSync(this.fd);
    return results.length;
  }

  close(): void {
    if (this.fd !== undefined) closeSync(this.fd);
    this.fd = undefined;
  }
}

/** Results as the JSONL's lines: one JSON text each, each ended by a newline. */
export function resultLines(results: readonly EvalPortResult[]): string {
  return results.map((r) => `${JSON.stringify(r)}\n`).join("");
}

/** Bytes read from the file at a time, and so about the most lines validated at once. */
const CHUNK_BYTES = 1 << 20;

/**
 * Checks, reading only, that `path` is a Results JSONL that run `runId` may go on with: missing,
 * or its whole lines (a torn last line, which a kill leaves, is ignored) are Results of no other
 * run (`metadata.stet.run_id`). Refuses with `E_INVALID_INPUT` (the first problems named, with
 * their lines) and changes nothing. The file is read a megabyte at a time, never whole.
 *
 * @example checkResultLog("results.jsonl", "r_abc");
 */
export function checkResultLog(path: string, runId: string): void {
  if (!existsSync(path)) return;
  const fd = openSync(path, "r");
  try {
    let tail = Buffer.alloc(0);
    let lineOffset = 0;
    const buffer = Buffer.allocUnsafe(CHUNK_BYTES);
    for (;;) {
      const read = readSync(fd, buffer, 0, CHUNK_BYTES, null);
      if (read === 0) return;
      const bytes = Buffer.concat([tail, buffer.subarray(0, read)]);
      const end = bytes.lastIndexOf(0x0a) + 1;
      tail = Buffer.from(bytes.subarray(end));
      if (end === 0) continue;
      const text = bytes.subarray(0, end).toString("utf8");
      checkLines(path, text, runId, lineOffset);
      lineOffset += countNewlines(text);
    }
  } finally {
    closeSync(fd);
  }
}

/** Checks whole lines `text` (starting after line `lineOffset`) as `checkResultLog` does. */
function checkLines(path: string, text: string, runId: string, lineOffset: number): void {
  if (text.trim() === "") return;
  const { valid, errors } = validateJsonLines(text, { file: path, kind: "result" });
  if (!valid) {
    const located = errors.map((e) =>
      e.line === undefined ? e : { ...e, line: e.line + lineOffset },
    );
    const shown = located.slice(0, 5).map((e) => `  ${formatValidationError(e)}`);
    throw new StetError(
      "E_INVALID_INPUT",
      `${path} holds lines that are not EvalPort Results; not appending to it:\n${shown.join("\n")}`,
      { details: { errors: located } },
    );
  }
  for (const line of text.split("\n")) {
    if (line.trim() === "") continue;
    // Each line was just validated as a Result against the EvalPort schema.
    const stet = (JSON.parse(line) as EvalPortResult).metadata?.stet;
    const id = isObject(stet) ? stet.run_id : undefined;
    if (typeof id === "string" && id !== runId) {
      throw new StetError(
        "E_INVALID_INPUT",
        `${path} holds results of run ${id}, not ${runId}; give another --output path`,
      );
    }
  }
}

function countNewlines(text: string): number {
  let n = 0;
  for (let i = text.indexOf("\n"); i !== -1; i = text.indexOf("\n", i + 1)) n++;
  return n;
}
