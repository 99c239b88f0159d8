import { StetError } from "../core/errors.js";
import { memorySplit, mergeLimits, prlimitArgs } from "./limits.js";
import { runProcess, type ProcessSpec } from "./run-process.js";
import { seccompFilter } from "./seccomp.js";
import type { ExecRequest, ExecResult, Sandbox, SandboxConfig, SandboxLimits } from "./types.js";

type BubblewrapConfig = Extract<SandboxConfig, { kind: "bubblewrap" }>;

/** The sandbox's PATH: system directories only, so `python3` is Debian's, not a shim in a home. */
export const SANDBOX_PATH = "/usr/local/bin:/usr/bin:/bin";

/** What a program sees besides its own env: nothing else is inherited. */
const BASE_ENV: Record<string, string> = {
  PATH: SANDBOX_PATH,
  HOME: "/tmp",
  TMPDIR: "/tmp",
  LANG: "C.UTF-8",
  PYTHONDONTWRITEBYTECODE: "1",
};

/** Top-level system directories: a symlink on the host (merged /usr) is one in the sandbox too. */
const SYSTEM_DIRS = ["/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"];
/** The few files of /etc programs read; the rest of /etc (and so any secret in it) is absent. */
const ETC_FILES = ["/etc/ld.so.cache", "/etc/alternatives", "/etc/localtime", "/etc/mime.types"];

const UID_NOBODY = "65534";

const checks = new Map<string, Promise<void>>();

/** bwrap reads the seccomp program from this descriptor of its own (the first after stdio). */
const SECCOMP_FD = 3;

/**
 * The bubblewrap backend: every execution in fresh namespaces (user, pid, network, mount, ipc,
 * uts, cgroup: `--unshare-all`; no network but its own loopback), `--die-with-parent`,
 * `--new-session` (no terminal to inject into), the system's /usr (and /lib*, /bin) read-only,
 * a private tmpfs as /tmp and working directory and another as /dev/shm, sized within `memoryMb`
 * (`memorySplit`; the only writable places: the root and /dev are remounted read-only), its own
 * /proc and a minimal /dev, a seccomp filter against memory no limit charges (`seccomp.ts`), no
 * descriptor but its stdio, and a cleared environment, bwrap's own (the sandbox's pid 1)
 * included. Inside, `prlimit` sets CPU time, address space (the rest of `memoryMb`), process
 * count and file size before the program starts. Run as root, stet starts bwrap as nobody
 * (setpriv) so the process limit holds and the program owns nothing on the host.
 *
 * @example await bubblewrap({ kind: "bubblewrap" }).exec({ command: ["python3", "-"], stdin: "print(1)" })
 */
export function bubblewrap(config: BubblewrapConfig): Sandbox {
  const bwrap = config.bwrap ?? "bwrap";
  const base = mergeLimits(config);
  const env = { ...BASE_ENV, ...config.env };
  const seccomp = seccompFilter();
  const specFor = (request: ExecRequest, limits: SandboxLimits): ProcessSpec => {
    const { tmpBytes, shmBytes, addressSpaceBytes } = memorySplit(limits);
    const argv = [
      ...asNobody(),
      // By path: bwrap runs with an empty environment, so no PATH to look it up on.
      findBinary(bwrap) ?? bwrap,
      ...bwrapArgs(
        { ...env, ...request.env },
        { tmpBytes, shmBytes },
        seccomp === undefined ? undefined : SECCOMP_FD,
      ),
      "--",
      "/usr/bin/prlimit",
      ...prlimitArgs(limits, addressSpaceBytes),
      "--",
      ...request.command,
    ];
    return {
      argv,
      // bwrap stays in the sandbox as its pid 1, whose environment the program can read.
      env: {},
      cwd: "/",
      stdin: request.stdin ?? "",
      ...(seccomp === undefined ? {} : { fds: [seccomp] }),
      limits,
      ...(request.signal === undefined ? {} : { signal: request.signal }),
    };
  };
  return {
    kind: "bubblewrap",
    check: () => {
      let pending = checks.get(bwrap);
      if (pending === undefined) {
        pending = probe(
          bwrap,
          specFor({ command: ["/usr/bin/true"] }, mergeLimits({ timeoutMs: 10_000 })),
        );
        checks.set(bwrap, pending);
        // A failed check is tried again next time (the user may have installed it meanwhile).
        pending.catch(() => checks.delete(bwrap));
      }
      return pending;
    },
    exec: async (request: ExecRequest): Promise<ExecResult> => {
      if (request.command.length === 0) throw new StetError("E_CONFIG", "sandbox: empty command");
      return runProcess(specFor(request, mergeLimits(config, request.limits)));
    },
    describe: () => ({ kind: "bubblewrap", bwrap, ...base }),
  };
}

function bwrapArgs(
  env: Record<string, string>,
  sizes: { tmpBytes: number; shmBytes: number },
  seccompFd: number | undefined,
): string[] {
  const { lstatSync, readlinkSync } = process.getBuiltinModule("node:fs");
  const args = ["--unshare-all", "--die-with-parent", "--new-session", "--ro-bind", "/usr", "/usr"];
  for (const dir of SYSTEM_DIRS) {
    const stat = lstatSync(dir, { throwIfNoEntry: false });
    if (stat?.isSymbolicLink()) args.push("--symlink", readlinkSync(dir), dir);
    else if (stat?.isDirectory()) args.push("--ro-bind", dir, dir);
  }
  for (const file of ETC_FILES) args.push("--ro-bind-try", file, file);
  args.push("--proc", "/proc", "--dev", "/dev");
  // /tmp and /dev/shm (POSIX semaphores and shared memory: Python's multiprocessing) are memory:
  // their sizes are part of memoryMb (memorySplit), and a write past them is ENOSPC.
  args.push("--size", String(sizes.tmpBytes), "--tmpfs", "/tmp", "--chdir", "/tmp");
  args.push("--size", String(sizes.shmBytes), "--tmpfs", "/dev/shm");
  // The root bwrap builds and its /dev are tmpfs too, of no size limit: read-only, so only /tmp
  // and /dev/shm take writes.
  args.push("--remount-ro", "/", "--remount-ro", "/dev");
  if (seccompFd !== undefined) args.push("--seccomp", String(seccompFd));
  args.push("--clearenv");
  for (const [name, value] of Object.entries(env)) args.push("--setenv", name, value);
  return args;
}

/** As root, bwrap starts as nobody: RLIMIT_NPROC does not bind root, and root owns the host. */
function asNobody(): string[] {
  if (process.getuid?.() !== 0) return [];
  return ["/usr/bin/setpriv", "--reuid", UID_NOBODY, "--regid", UID_NOBODY, "--clear-groups", "--"];
}

/** The binary as a path: itself when it has a slash, else the first match on the PATH. */
function findBinary(name: string): string | undefined {
  const { accessSync, constants } = process.getBuiltinModule("node:fs");
  const { join } = process.getBuiltinModule("node:path");
  const candidates = name.includes("/")
    ? [name]
    : (process.env.PATH ?? SANDBOX_PATH)
        .split(":")
        .filter(Boolean)
        .map((dir) => join(dir, name));
  return candidates.find((file) => {
    try {
      accessSync(file, constants.X_OK);
      return true;
    } catch {
      return false;
    }
  });
}

async function probe(bwrap: string, spec: ProcessSpec): Promise<void> {
  const optOut = 'or set sandbox: { kind: "none" } on the eval to run its programs unsandboxed';
  let result: ExecResult;
  try {
    if (findBinary(bwrap) === undefined) {
      throw Object.assign(new Error(`no ${bwrap}`), { code: "ENOENT" });
    }
    result = await runProcess(spec);
  } catch (error) {
    const missing = (error as NodeJS.ErrnoException).code === "ENOENT";
    // Run as root, the first word is setpriv (util-linux), which may be the missing one.
    const absent = findBinary(bwrap) === undefined ? bwrap : spec.argv[0];
    const what = missing ? `"${absent}" was not found` : (error as Error).message;
    throw new StetError(
      "E_CONFIG",
      `sandbox: bubblewrap is not available (${what}). Install it (Debian/Ubuntu: apt-get install bubblewrap; Fedora: dnf install bubblewrap), ${optOut}.`,
      { cause: error, details: { bwrap } },
    );
  }
  if (result.exitCode !== 0) {
    const why = result.stderr.trim() || `exit ${result.exitCode ?? result.signal}`;
    throw new StetError(
      "E_CONFIG",
      `sandbox: bubblewrap cannot start a sandbox here (${why}). It needs bubblewrap 0.7 or newer (for --size), user namespaces (sysctl kernel.unprivileged_userns_clone=1 or user.max_user_namespaces > 0) and util-linux's prlimit and setpriv; ${optOut}.`,
      { details: { bwrap } },
    );
  }
}
