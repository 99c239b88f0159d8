/**
 * Where an eval runs untrusted programs (the code a model wrote, an EvalPort `code` grader).
 * `bubblewrap` (the default) contains them; `none` runs them as plain processes with your
 * privileges, network and files, and has to be asked for by name.
 */
export type SandboxConfig =
  | ({
      kind: "bubblewrap";
      /** The bwrap binary. Default "bwrap" on PATH. */ bwrap?: string;
    } & Partial<SandboxLimits> & {
        /** Environment variables the program sees besides PATH, HOME, LANG (nothing is inherited). */
        env?: Record<string, string>;
      })
  | ({ kind: "none" } & Partial<SandboxLimits> & { env?: Record<string, string> });

/** The limits of one execution. */
export interface SandboxLimits {
  /** Wall time; then every process of the execution is killed. Default 10 000. */
  timeoutMs: number;
  /** CPU seconds (RLIMIT_CPU). Default: the wall time, rounded up to a second. */
  cpuSeconds: number;
  /** Address space in MiB (RLIMIT_AS). Default 1024. */
  memoryMb: number;
  /** Processes (RLIMIT_NPROC, counted inside the sandbox's user namespace). Default 64. */
  maxProcesses: number;
  /** Bytes kept of stdout and of stderr each; the rest is read, counted and discarded. Default 65 536. */
  maxOutputBytes: number;
}

export const DEFAULT_LIMITS: SandboxLimits = {
  timeoutMs: 10_000,
  cpuSeconds: 0,
  memoryMb: 1024,
  maxProcesses: 64,
  maxOutputBytes: 65_536,
};

/** One program to run. */
export interface ExecRequest {
  /** argv; a bare name is looked up on the sandbox's PATH (/usr/bin, /bin), not yours. */
  command: readonly string[];
  /** Written to the program's stdin, which is then closed. */
  stdin?: string;
  /** Added to the sandbox's environment for this execution. */
  env?: Record<string, string>;
  /** Aborting kills the execution at once. */
  signal?: AbortSignal;
  /** Overrides of the sandbox's limits for this execution. */
  limits?: Partial<SandboxLimits>;
}

export interface ExecResult {
  /** The exit code, or null when a signal ended the program. */
  exitCode: number | null;
  signal: string | null;
  /** The wall-time limit ended it. */
  timedOut: boolean;
  /** The request's signal aborted it. */
  aborted: boolean;
  /** The first `maxOutputBytes` of stdout (UTF-8, a cut character replaced). */
  stdout: string;
  stderr: string;
  /** Bytes the program wrote to each stream in all, kept or not. */
  stdoutBytes: number;
  stderrBytes: number;
  durationMs: number;
}

export interface Sandbox {
  readonly kind: SandboxConfig["kind"];
  /** Throws StetError E_CONFIG, saying what to install, when the backend cannot run here. */
  check(): Promise<void>;
  exec(request: ExecRequest): Promise<ExecResult>;
  /** What a run records of it (no env values). */
  describe(): Record<string, string | number>;
}

/**
 * A scorer or solver that runs programs: `resolveEval` hands it a getter of the eval's sandbox
 * (created and checked on first call, once) and uses what it returns in its place. One with a
 * sandbox of its own checks that one instead.
 */
export const USES_SANDBOX: unique symbol = Symbol.for("stet.uses-sandbox");

export interface UsesSandbox<T> {
  [USES_SANDBOX]: (evalSandbox: () => Promise<Sandbox>) => Promise<T>;
}

export function usesSandbox<T>(value: unknown): value is UsesSandbox<T> {
  return (
    value !== null &&
    (typeof value === "object" || typeof value === "function") &&
    typeof (value as Record<symbol, unknown>)[USES_SANDBOX] === "function"
  );
}
