import { execFileSync } from "node:child_process";
import { closeSync, mkdtempSync, openSync, rmSync, writeSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, join } from "node:path";

/**
 * Real filesystems that break on demand, for tests of a store whose disk fills up or turns
 * read-only: a small tmpfs and an ext4 image on a loop device mounted `errors=remount-ro`.
 * Mounting needs root; `mountSupport` says why not when it cannot.
 */
export interface Mount {
  dir: string;
  /** Unmounts (lazily, if something still holds it) and removes what it made; safe to repeat. */
  cleanup: () => void;
}

const run = (cmd: string, args: string[]) =>
  execFileSync(cmd, args, { stdio: ["ignore", "pipe", "pipe"] }).toString();

/** Null when tmpfs and ext4 loop mounts work here, else why they do not (for `it.skipIf`). */
export function mountSupport(): string | null {
  if (process.getuid?.() !== 0) return "mounting filesystems needs root";
  let tmpfs: Mount | undefined;
  let ext4: Ext4Mount | undefined;
  try {
    tmpfs = mountTmpfs(64 * 1024);
    ext4 = mountExt4(8);
    return null;
  } catch (error) {
    return `cannot mount test filesystems: ${(error as Error).message.split("\n")[0]}`;
  } finally {
    tmpfs?.cleanup();
    ext4?.cleanup();
  }
}

/** A tmpfs of `bytes` on a fresh directory. */
export function mountTmpfs(bytes: number): Mount {
  const dir = mkdtempSync(join(tmpdir(), "stet-tmpfs-"));
  try {
    run("mount", ["-t", "tmpfs", "-o", `size=${bytes}`, "tmpfs", dir]);
  } catch (error) {
    rmSync(dir, { recursive: true, force: true });
    throw error;
  }
  return { dir, cleanup: () => unmount(dir) };
}

/**
 * Writes a file in `dir` until the filesystem has no space left; returns its path (remove it to
 * free the space again).
 */
export function fillUp(dir: string): string {
  const path = join(dir, "filler");
  const fd = openSync(path, "a");
  const chunk = Buffer.alloc(64 * 1024, 0x78);
  try {
    for (;;) writeSync(fd, chunk);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "ENOSPC") throw error;
  } finally {
    closeSync(fd);
  }
  // The last chunk may not have fitted whole: fill the remainder byte-sized pieces can take.
  const fd2 = openSync(path, "a");
  try {
    for (;;) writeSync(fd2, Buffer.alloc(512, 0x78));
  } catch {
    // Full.
  } finally {
    closeSync(fd2);
  }
  return path;
}

export interface Ext4Mount extends Mount {
  /** Makes the filesystem hit an error: with errors=remount-ro it turns read-only at once. */
  fail: () => void;
  /** Unmounts, repairs (e2fsck) and mounts the image again, writable. */
  repair: () => void;
}

/** An ext4 image of `megabytes` on a loop device, mounted `errors=remount-ro`. */
export function mountExt4(megabytes: number): Ext4Mount {
  const root = mkdtempSync(join(tmpdir(), "stet-ext4-"));
  const image = join(root, "disk.img");
  const dir = join(root, "mnt");
  const mount = () => run("mount", ["-o", "loop,errors=remount-ro", image, dir]);
  try {
    writeFileSync(image, "");
    run("truncate", ["-s", `${megabytes}M`, image]);
    run("mkfs.ext4", ["-q", "-F", image]);
    run("mkdir", [dir]);
    mount();
  } catch (error) {
    unmount(dir);
    rmSync(root, { recursive: true, force: true });
    throw error;
  }
  const device = basename(run("findmnt", ["-n", "-o", "SOURCE", dir]).trim());
  return {
    dir,
    fail: () => writeFileSync(`/sys/fs/ext4/${device}/trigger_fs_error`, "stet test\n"),
    repair: () => {
      unmount(dir, { keep: true });
      try {
        run("e2fsck", ["-f", "-y", image]);
      } catch (error) {
        // 1: errors were corrected, which is what an error-triggered filesystem needs.
        if ((error as { status?: number }).status !== 1) throw error;
      }
      mount();
    },
    cleanup: () => {
      unmount(dir);
      rmSync(root, { recursive: true, force: true });
    },
  };
}

function unmount(dir: string, options: { keep?: boolean } = {}): void {
  try {
    run("umount", [dir]);
  } catch {
    try {
      run("umount", ["-l", dir]);
    } catch {
      // Not mounted (any more).
    }
  }
  if (!options.keep) rmSync(dir, { recursive: true, force: true });
}
