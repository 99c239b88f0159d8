import { StetError } from "../core/errors.js";
import { DEFAULT_LIMITS, type SandboxLimits } from "./types.js";

const POSITIVE_INTEGER = ["timeoutMs", "memoryMb", "maxProcesses", "maxOutputBytes"] as const;

/**
 * The limits of one execution: the defaults, then the sandbox's, then the request's. CPU time
 * defaults to the wall time rounded up to a whole second. A bad value is E_CONFIG naming it.
 */
export function mergeLimits(...layers: (Partial<SandboxLimits> | undefined)[]): SandboxLimits {
  const merged: Partial<SandboxLimits> = {};
  for (const layer of layers) {
    for (const [key, value] of Object.entries(layer ?? {})) {
      if (value !== undefined && key in DEFAULT_LIMITS) {
        (merged as Record<string, number>)[key] = value;
      }
    }
  }
  const limits = { ...DEFAULT_LIMITS, ...merged };
  for (const key of [...POSITIVE_INTEGER, "cpuSeconds"] as const) {
    const value = limits[key];
    const ok = Number.isInteger(value) && (value > 0 || (key === "cpuSeconds" && value === 0));
    if (!ok)
      throw new StetError("E_CONFIG", `sandbox: ${key} must be a positive integer, got ${value}`);
  }
  if (limits.cpuSeconds === 0) limits.cpuSeconds = Math.max(1, Math.ceil(limits.timeoutMs / 1000));
  return limits;
}

/**
 * How the bubblewrap sandbox spends `memoryMb`: an eighth is the size of its /tmp and a
 * thirty-second that of its /dev/shm (its only writable filesystems, both memory), the rest each
 * process's address space, so that one process's memory and the sandbox's files together stay
 * within it. The address space keeps the most because runtimes reserve much of it up front
 * (Node reserves some 710 MiB just to start).
 *
 * @example memorySplit(mergeLimits({})) // /tmp 128 MiB, /dev/shm 32 MiB, address space 864 MiB
 */
export function memorySplit(limits: SandboxLimits): {
  tmpBytes: number;
  shmBytes: number;
  addressSpaceBytes: number;
} {
  const total = limits.memoryMb * MIB;
  const tmpBytes = fsSize(total / 8);
  const shmBytes = fsSize(total / 32);
  return { tmpBytes, shmBytes, addressSpaceBytes: Math.max(0, total - tmpBytes - shmBytes) };
}

/**
 * A tmpfs size: whole 64 KiB (the largest page size, so the kernel rounds nothing up), and never
 * 0, which to tmpfs means unlimited.
 */
function fsSize(bytes: number): number {
  return Math.max(FS_UNIT, Math.floor(bytes / FS_UNIT) * FS_UNIT);
}

/**
 * The rlimits as `prlimit` options (util-linux), set inside the sandbox before the program runs.
 * The address space is all of `memoryMb` unless the caller spends part of it elsewhere.
 */
export function prlimitArgs(
  limits: SandboxLimits,
  addressSpaceBytes = limits.memoryMb * MIB,
): string[] {
  return [
    `--cpu=${limits.cpuSeconds}`,
    `--as=${addressSpaceBytes}`,
    `--nproc=${limits.maxProcesses}`,
    // No file (in /tmp, which is memory, or unsandboxed, on disk) may grow past this.
    `--fsize=${FILE_SIZE_BYTES}`,
    "--core=0",
  ];
}

const MIB = 1024 * 1024;
const FS_UNIT = 64 * 1024;
const FILE_SIZE_BYTES = 64 * MIB;
