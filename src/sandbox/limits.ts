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

/** The rlimits as `prlimit` options (util-linux), set inside the sandbox before the program runs. */
export function prlimitArgs(limits: SandboxLimits): string[] {
  return [
    `--cpu=${limits.cpuSeconds}`,
    `--as=${limits.memoryMb * 1024 * 1024}`,
    `--nproc=${limits.maxProcesses}`,
    // No file in the private /tmp (which is memory) may grow past this.
    `--fsize=${FILE_SIZE_BYTES}`,
    "--core=0",
  ];
}

const FILE_SIZE_BYTES = 64 * 1024 * 1024;
