import {
  closeSync,
  existsSync,
  fsyncSync,
  openSync,
  readFileSync,
  truncateSync,
  writeSync,
} from "node:fs";
import { dirname } from "node:path";
import { StetError } from "../core/errors.js";
import { formatValidationError } from "./format-validation-error.js";
import { resultKey, type EvalPortResult } from "./result-set-types.js";
import { validateJsonLines } from "./validate-json-lines.js";
import { isObject } from "./validation-types.js";
import {
  ensureDirectory,
  syncDirectory,
  writeFileAtomicSync,
} from "../durable/write-file-atomic.js";

/**
 * An append-only Results JSONL file holding each key (test_case_id, attempt) at most once.
 * Every `append` is one write of whole lines followed by fsync, so a process killed at any
 * moment leaves at worst a torn last line, which `reopen` cuts off. Synchronous on purpose: a
 * line is durable before `append` returns.
 */
export class ResultLog {
  private constructor(
    readonly path: string,
    private fd: number | undefined,
    private readonly keys: Set<string>,
  ) {}

  /**
   * Opens `path` for a new run: created (its folder too), or emptied when it exists.
   *
   * @example const log = ResultLog.create("results.jsonl");
   */
  static create(path: string): ResultLog {
    ensureDirectory(dirname(path));
    const fd = openSync(path, "w");
    fsyncSync(fd);
    syncDirectory(dirname(path));
    return new ResultLog(path, fd, new Set());
  }

  /**
   * Opens `path` to go on appending results of run `runId` (created when missing). A torn last
   * line (no final newline) is truncated away; a file whose lines are not Results, or are
   * another run's (`metadata.stet.run_id`), is refused with `E_INVALID_INPUT` and left as is.
   *
   * Lines that `isCurrent` rejects (a result the run has since superseded, such as a changed
   * sample re-run with `--rerun-changed`) are dropped: the file is rewritten atomically with the
   * other lines byte for byte, and the key becomes free for its current result.
   *
   * @example const log = ResultLog.reopen("results.jsonl", "r_abc"); log.has(result);
   */
  static reopen(
    path: string,
    runId: string,
    isCurrent: (result: EvalPortResult) => boolean = () => true,
  ): ResultLog {
    if (!existsSync(path)) return ResultLog.create(path);
    const bytes = readFileSync(path);
    const end = bytes.lastIndexOf(0x0a) + 1;
    const text = bytes.subarray(0, end).toString("utf8");
    const lines = text.trim() === "" ? [] : checkedLines(path, text, runId);
    const kept = lines.filter((l) => isCurrent(l.result));
    if (kept.length < lines.length) {
      writeFileAtomicSync(path, kept.map((l) => `${l.text}\n`).join(""));
    } else if (end < bytes.length) {
      truncateSync(path, end);
    }
    const fd = openSync(path, "a");
    fsyncSync(fd);
    return new ResultLog(path, fd, new Set(kept.map((l) => resultKey(l.result))));
  }

  /** Whether the file already holds a result for this key. */
  has(result: Pick<EvalPortResult, "test_case_id" | "attempt">): boolean {
    return this.keys.has(resultKey(result));
  }

  /** Number of keys in the file. */
  get size(): number {
    return this.keys.size;
  }

  /**
   * Appends the results whose key the file does not hold yet, as one write, then fsyncs.
   * Returns how many lines were written.
   */
  append(results: readonly EvalPortResult[]): number {
    if (this.fd === undefined) throw new Error(`${this.path} is closed`);
    const fresh = new Map<string, EvalPortResult>();
    for (const r of results) if (!this.has(r)) fresh.set(resultKey(r), r);
    if (fresh.size === 0) return 0;
    const bytes = Buffer.from([...fresh.values()].map((r) => `${JSON.stringify(r)}\n`).join(""));
    for (let offset = 0; offset < bytes.length;) {
      offset += writeSync(this.fd, bytes, offset, bytes.length - offset);
    }
    fsyncSync(this.fd);
    for (const key of fresh.keys()) this.keys.add(key);
    return fresh.size;
  }

  close(): void {
    if (this.fd !== undefined) closeSync(this.fd);
    this.fd = undefined;
  }
}

/**
 * Checks, reading only, that `path` is a Results JSONL that run `runId` may go on appending to
 * (what `ResultLog.reopen` will open): missing, or its whole lines are Results of no other run.
 * Refuses with `E_INVALID_INPUT` as `reopen` would, before a resume executes anything.
 *
 * @example checkResultLog("results.jsonl", "r_abc");
 */
export function checkResultLog(path: string, runId: string): void {
  if (!existsSync(path)) return;
  const bytes = readFileSync(path);
  const text = bytes.subarray(0, bytes.lastIndexOf(0x0a) + 1).toString("utf8");
  if (text.trim() !== "") checkedLines(path, text, runId);
}

function checkedLines(
  path: string,
  text: string,
  runId: string,
): { text: string; result: EvalPortResult }[] {
  const { valid, errors } = validateJsonLines(text, { file: path, kind: "result" });
  if (!valid) {
    const shown = errors.slice(0, 5).map((e) => `  ${formatValidationError(e)}`);
    throw new StetError(
      "E_INVALID_INPUT",
      `${path} holds lines that are not EvalPort Results; not appending to it:\n${shown.join("\n")}`,
      { details: { errors } },
    );
  }
  const lines = text
    .split("\n")
    .filter((line) => line.trim() !== "")
    // Each line was just validated as a Result against the EvalPort schema.
    .map((line) => ({ text: line, result: JSON.parse(line) as EvalPortResult }));
  for (const { result: r } of lines) {
    const stet = r.metadata?.stet;
    const id = isObject(stet) ? stet.run_id : undefined;
    if (typeof id === "string" && id !== runId) {
      throw new StetError(
        "E_INVALID_INPUT",
        `${path} holds results of run ${id}, not ${runId}; give another --output path`,
      );
    }
  }
  return lines;
}
