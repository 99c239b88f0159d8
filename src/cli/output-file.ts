import { randomBytes } from "node:crypto";
import { open, rm, stat } from "node:fs/promises";
import { basename, dirname, join, resolve } from "node:path";
import { StetError } from "../core/errors.js";
import { ensureDirectory } from "../durable/write-file-atomic.js";

/**
 * Makes sure a file the command will write can be written, before any work is done for it:
 * its folder is created when missing, and a path that names a directory, lies under a file, or
 * sits in a folder we may not write is a usage error naming `flag` and the path. Nothing is
 * written to the file itself (an existing one is opened without truncating); a probe file beside
 * it is created and removed, because the atomic writes need to create files in that folder.
 *
 * @example await prepareOutputFile("out/results.jsonl", "--output"); // creates out/ if missing
 */
export async function prepareOutputFile(path: string, flag: string): Promise<void> {
  const blank = path.trim() === "";
  const shown = blank ? JSON.stringify(path) : path;
  const refuse = (why: string) => new StetError("E_USAGE", `${flag} ${shown}: ${why}`);
  if (blank) throw refuse("is empty; give a file path");
  if (/[\\/]$/.test(path)) throw refuse("names a directory; give a file path");
  const dir = dirname(resolve(path));
  try {
    ensureDirectory(dir);
  } catch (error) {
    throw refuse(`cannot create the folder ${dir}: ${reason(error)}`);
  }
  const existing = await stat(path).catch((error: NodeJS.ErrnoException) => {
    if (error.code === "ENOENT") return undefined;
    throw refuse(`cannot be written: ${reason(error)}`);
  });
  if (existing?.isDirectory()) throw refuse("is a directory; give a file path inside it");
  try {
    if (existing) await (await open(path, "r+")).close();
    const probe = join(dir, `.${basename(path)}.${randomBytes(6).toString("hex")}.probe`);
    await (await open(probe, "wx")).close();
    await rm(probe, { force: true });
  } catch (error) {
    throw refuse(`cannot be written: ${reason(error)}`);
  }
}

function reason(error: unknown): string {
  switch ((error as NodeJS.ErrnoException).code) {
    case "ENOTDIR":
    case "EEXIST":
      return "a part of the path is a file, not a folder";
    case "EACCES":
    case "EPERM":
      return "permission denied";
    case "EROFS":
      return "the file system is read-only";
    default:
      return error instanceof Error ? error.message : String(error);
  }
}
