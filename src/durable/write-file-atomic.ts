import { randomBytes } from "node:crypto";
import {
  closeSync,
  fsyncSync,
  mkdirSync,
  openSync,
  readdirSync,
  renameSync,
  rmSync,
  statSync,
  writeSync,
} from "node:fs";
import { open, rename, rm } from "node:fs/promises";
import { basename, dirname, join, resolve } from "node:path";

/**
 * Replaces `path` with `text` so that readers (and a crash) see the old file or the new one,
 * never a mix: the text goes to a temporary file beside it, is fsynced, then renamed over the
 * target, and the directory is fsynced so the rename itself survives a power loss. A missing
 * folder is created first (`ensureDirectory`).
 *
 * @example await writeFileAtomic("results.json", `${JSON.stringify(doc, null, 2)}\n`);
 */
export async function writeFileAtomic(path: string, text: string): Promise<void> {
  ensureDirectory(dirname(path));
  const temp = tempPath(path);
  try {
    const handle = await open(temp, "wx");
    try {
      await handle.writeFile(text, "utf8");
      await handle.sync();
    } finally {
      await handle.close();
    }
    await rename(temp, path);
  } catch (error) {
    await rm(temp, { force: true });
    throw error;
  }
  syncDirectory(dirname(path));
}

/**
 * `writeFileAtomic` of a text written a piece at a time by `body` (each piece goes to the
 * temporary file as it comes, so a long document is never held whole): the target is replaced
 * only once `body` finished; if it throws, the old file (or none) stays and the error is thrown.
 *
 * @example await writeStreamAtomic("results.json", async (write) => { await write("{}\n"); });
 */
export async function writeStreamAtomic(
  path: string,
  body: (write: (text: string) => Promise<void>) => Promise<void>,
): Promise<void> {
  ensureDirectory(dirname(path));
  const temp = tempPath(path);
  streaming.add(temp);
  try {
    const handle = await open(temp, "wx");
    try {
      await body(async (text) => {
        await handle.write(text, null, "utf8");
      });
      await handle.sync();
    } finally {
      await handle.close();
    }
    await rename(temp, path);
  } catch (error) {
    await rm(temp, { force: true });
    throw error;
  } finally {
    streaming.delete(temp);
  }
  syncDirectory(dirname(path));
}

/** The temporary files `writeStreamAtomic` is writing now (none once each is renamed or removed). */
const streaming = new Set<string>();

/**
 * Removes the temporary files of the streamed writes under way (`writeStreamAtomic`), at once:
 * for a process about to end on a signal, whose writes will never be renamed. Their targets are
 * left as they were.
 *
 * @example process.once("SIGINT", () => { removeStreamingTemps(); process.exit(130); });
 */
export function removeStreamingTemps(): void {
  for (const temp of streaming) rmSync(temp, { force: true });
  streaming.clear();
}

/** `writeFileAtomic` for callers that must not yield (a log reopened before it appends). */
export function writeFileAtomicSync(path: string, text: string): void {
  ensureDirectory(dirname(path));
  const temp = tempPath(path);
  try {
    const fd = openSync(temp, "wx");
    try {
      const bytes = Buffer.from(text, "utf8");
      for (let offset = 0; offset < bytes.length;) {
        offset += writeSync(fd, bytes, offset, bytes.length - offset);
      }
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    renameSync(temp, path);
  } catch (error) {
    rmSync(temp, { force: true });
    throw error;
  }
  syncDirectory(dirname(path));
}

/** How long a dead writer's temporary file is left before a later write of its target removes it. */
export const STALE_TEMP_MS = 10 * 60_000;

/**
 * A temporary file's name beside `path`, naming the process writing it: a write killed before
 * its rename (SIGKILL, a crash) leaves it, and a later write of the same target removes it once
 * that process is gone (`removeStaleTemps`).
 */
function tempPath(path: string): string {
  removeStaleTemps(path);
  const name = `.${basename(path)}.${process.pid}-${randomBytes(6).toString("hex")}.tmp`;
  return join(dirname(path), name);
}

/**
 * Removes the temporary files that writes of `path` killed before their rename left beside it:
 * those whose process is no longer alive on this machine and that nobody wrote to for
 * `STALE_TEMP_MS` (a process of the same number on another machine sharing the folder, still
 * writing, keeps its file fresh). Best effort: a file it cannot read or remove stays.
 */
export function removeStaleTemps(path: string, now: number = Date.now()): void {
  const dir = dirname(path);
  const prefix = `.${basename(path)}.`;
  let names: string[];
  try {
    names = readdirSync(dir).filter((name) => name.startsWith(prefix) && name.endsWith(".tmp"));
  } catch {
    return;
  }
  for (const name of names) {
    const pid = /^(\d+)-[0-9a-f]{12}\.tmp$/.exec(name.slice(prefix.length))?.[1];
    if (pid === undefined || alive(Number(pid))) continue;
    const temp = join(dir, name);
    try {
      if (now - statSync(temp).mtimeMs >= STALE_TEMP_MS) rmSync(temp, { force: true });
    } catch {
      // Gone already, or not ours to remove.
    }
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: alive, another user's.
    return (error as NodeJS.ErrnoException).code !== "ESRCH";
  }
}

/**
 * fsyncs a directory, making a file created or renamed in it durable. Some platforms (Windows)
 * cannot open a directory; there the rename is as durable as the OS makes it.
 */
export function syncDirectory(dir: string): void {
  let fd: number | undefined;
  try {
    fd = openSync(dir, "r");
    fsyncSync(fd);
  } catch {
    // Not supported here; nothing more can be done.
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

/**
 * Creates `dir` and any missing parents (`mkdir -p`), fsyncing the parent of each folder it
 * created so the new folders survive a power loss with the file written into them.
 *
 * @example ensureDirectory("out/2026-12-01"); // then write out/2026-12-01/results.json
 */
export function ensureDirectory(dir: string): void {
  const first = mkdirSync(dir, { recursive: true });
  if (first === undefined) return;
  // Each created folder's entry lives in its parent: from the deepest up to the first created.
  for (let created = resolve(dir); ; created = dirname(created)) {
    syncDirectory(dirname(created));
    if (created === resolve(first) || dirname(created) === created) break;
  }
}
