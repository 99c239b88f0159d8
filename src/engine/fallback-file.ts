import {
  closeSync,
  fstatSync,
  fsyncSync,
  ftruncateSync,
  mkdirSync,
  openSync,
  unlinkSync,
  writeSync,
} from "node:fs";
import { homedir, tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { syncDirectory } from "../durable/write-file-atomic.js";

/**
 * The directories a run's fallback file may go to, in the order tried: the store's own (where it
 * has always gone), then `STET_FALLBACK_DIR`, the user's state directory (`$XDG_STATE_HOME/stet`,
 * else `~/.local/state/stet`) and the temporary directory (`$TMPDIR/stet`). The ones after the
 * first matter when the store's filesystem is the thing that failed: full or read-only.
 *
 * @example fallbackDirs("/data", { STET_FALLBACK_DIR: "/safe", HOME: "/home/ann" })
 * // ["/data", "/safe", "/home/ann/.local/state/stet", "/tmp/stet"]
 */
export function fallbackDirs(storeDir: string, env: NodeJS.ProcessEnv = process.env): string[] {
  const state = env.XDG_STATE_HOME
    ? join(env.XDG_STATE_HOME, "stet")
    : join(env.HOME || homedir(), ".local", "state", "stet");
  const dirs = [storeDir, env.STET_FALLBACK_DIR, state, join(env.TMPDIR || tmpdir(), "stet")];
  return [...new Set(dirs.filter((d): d is string => !!d).map((d) => resolve(d)))];
}

/** A place the fallback file could not be written, and why. */
export interface Refusal {
  path: string;
  message: string;
}

/**
 * A run's fallback file: JSONL lines appended durably (written, then fsynced) to the first
 * candidate directory that takes them. The file that took lines is tried first the next time;
 * when it stops taking them, every line written so far is written again to the next candidate
 * that works, so one file always holds them all (the file left behind is removed when it can
 * be). A failed append is rolled back, so no file is left with half a line.
 */
export class FallbackFile {
  #path: string | null = null;
  #written: string[] = [];
  readonly #candidates: string[];
  readonly #refused = new Map<string, string>();

  constructor(dirs: readonly string[], name: string) {
    this.#candidates = dirs.map((dir) => join(dir, name));
  }

  /** The file holding every line appended so far; null before the first or if none took them. */
  get path(): string | null {
    return this.#path;
  }

  /** Each candidate that refused lines, with its latest reason. */
  get refused(): Refusal[] {
    return [...this.#refused].map(([path, message]) => ({ path, message }));
  }

  /** Appends `lines` (each ending in `\n`); false when no candidate would take them. */
  append(lines: readonly string[]): boolean {
    if (this.#path !== null && this.#tryAppend(this.#path, lines.join(""))) {
      this.#written.push(...lines);
      return true;
    }
    const all = [...this.#written, ...lines].join("");
    for (const path of this.#candidates) {
      if (path === this.#path || !this.#tryAppend(path, all)) continue;
      if (this.#path !== null) removeQuietly(this.#path);
      this.#path = path;
      this.#written.push(...lines);
      return true;
    }
    return false;
  }

  #tryAppend(path: string, text: string): boolean {
    try {
      appendDurably(path, text);
      return true;
    } catch (error) {
      this.#refused.set(path, reason(error));
      return false;
    }
  }
}

/** Node's fs messages end in the call and its path (`…, open '/x/y'`): the path is said already. */
function reason(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  return message.replace(/, \w+( '.*')?$/, "");
}

function appendDurably(path: string, text: string): void {
  mkdirSync(dirname(path), { recursive: true });
  const fd = openSync(path, "a");
  let size: number | undefined;
  try {
    size = fstatSync(fd).size;
    const bytes = Buffer.from(text, "utf8");
    for (let off = 0; off < bytes.length;) off += writeSync(fd, bytes, off);
    fsyncSync(fd);
  } catch (error) {
    rollBack(fd, path, size);
    throw error;
  } finally {
    closeSync(fd);
  }
  syncDirectory(dirname(path));
}

/** Cuts a failed append off again (a full disk may have taken part of it). */
function rollBack(fd: number, path: string, size: number | undefined): void {
  if (size === undefined) return;
  try {
    ftruncateSync(fd, size);
  } catch {
    // Nothing more to do: the lines are reported as refused here either way.
  }
  if (size === 0) removeQuietly(path);
}

function removeQuietly(path: string): void {
  try {
    unlinkSync(path);
  } catch {
    // A read-only filesystem keeps it; the lines it holds are also in the file that took over.
  }
}
