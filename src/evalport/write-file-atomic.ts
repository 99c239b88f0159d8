import { randomBytes } from "node:crypto";
import { closeSync, fsyncSync, openSync, renameSync, rmSync, writeSync } from "node:fs";
import { open, rename, rm } from "node:fs/promises";
import { basename, dirname, join } from "node:path";

/**
 * Replaces `path` with `text` so that readers (and a crash) see the old file or the new one,
 * never a mix: the text goes to a temporary file beside it, is fsynced, then renamed over the
 * target, and the directory is fsynced so the rename itself survives a power loss.
 *
 * @example await writeFileAtomic("results.json", `${JSON.stringify(doc, null, 2)}\n`);
 */
export async function writeFileAtomic(path: string, text: string): Promise<void> {
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

/** `writeFileAtomic` for callers that must not yield (a log reopened before it appends). */
export function writeFileAtomicSync(path: string, text: string): void {
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

function tempPath(path: string): string {
  return join(dirname(path), `.${basename(path)}.${randomBytes(6).toString("hex")}.tmp`);
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
