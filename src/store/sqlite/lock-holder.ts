import { readFileSync, statSync } from "node:fs";

/** Whether a driver error is SQLite's "database is locked" (SQLITE_BUSY and its variants). */
export function isBusy(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === "string" && code.startsWith("SQLITE_BUSY");
}

/**
 * What to say when the database stayed locked past the busy timeout: who holds the lock, if this
 * machine can tell, and how long stet waited.
 *
 * @example busyMessage("/data/stet.db", 10_000)
 * // "the database is locked: pid 4242 holds its write lock and is stopped (…); gave up after 10s"
 */
export function busyMessage(path: string, busyTimeoutMs: number): string {
  const holder = describeWriteLockHolder(path) ?? "another process holds its write lock";
  return `the database is locked: ${holder}; gave up after ${busyTimeoutMs / 1000}s (busy timeout)`;
}

/**
 * Who holds the write lock of a SQLite database in WAL mode, as far as this machine can tell:
 * the lock is byte 120 of the `-shm` file, a POSIX lock that Linux lists in /proc/locks with its
 * holder's pid, and /proc/<pid>/stat says whether that process is stopped. Undefined when it
 * cannot be told (another OS, another host sharing the file, no such lock now).
 *
 * @example describeWriteLockHolder("/data/stet.db")
 * // "pid 4242 holds its write lock and is stopped (state T: SIGSTOP, Ctrl-Z or a debugger); …"
 */
export function describeWriteLockHolder(path: string): string | undefined {
  const pid = writeLockHolder(path);
  if (pid === undefined) return undefined;
  const state = processState(pid);
  if (state === "T" || state === "t") {
    return (
      `pid ${pid} holds its write lock and is stopped (state ${state}: SIGSTOP, Ctrl-Z or a ` +
      `debugger); nothing can write to this store until it continues (kill -CONT ${pid}) or ends`
    );
  }
  return `pid ${pid} holds its write lock${state === undefined ? "" : ` (state ${state})`}`;
}

/** The pid holding the database's write lock (byte 120 of its `-shm` file), if Linux says. */
export function writeLockHolder(path: string): number | undefined {
  try {
    const { dev, ino } = statSync(`${path}-shm`, { bigint: true });
    // /proc/locks names a file as major:minor:inode, the device numbers in hex (glibc's split).
    const major = ((dev >> 8n) & 0xfffn) | ((dev >> 32n) & ~0xfffn);
    const minor = (dev & 0xffn) | ((dev >> 12n) & ~0xffn);
    const file = `${major.toString(16).padStart(2, "0")}:${minor.toString(16).padStart(2, "0")}:${ino}`;
    for (const line of readFileSync("/proc/locks", "utf8").split("\n")) {
      // "1: POSIX  ADVISORY  WRITE 9542 fe:00:2146723 120 120"
      const f = line.trim().split(/\s+/);
      if (f[1] === "POSIX" && f[3] === "WRITE" && f[5] === file && f[6] === "120") {
        const pid = Number(f[4]);
        if (Number.isSafeInteger(pid) && pid > 0) return pid;
      }
    }
  } catch {
    // No /proc, or the -shm file is gone: nothing to tell.
  }
  return undefined;
}

/** The state letter of /proc/<pid>/stat (R, S, D, T, t, Z, …), or undefined. */
export function processState(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    // The command name, in parentheses, may hold spaces and parentheses itself.
    return stat.slice(stat.lastIndexOf(")") + 2).split(" ")[0] || undefined;
  } catch {
    return undefined;
  }
}
