import type {
  ChildProcess,
  ChildProcessWithoutNullStreams,
  StdioOptions,
} from "node:child_process";
import type { Duplex } from "node:stream";
import type { ExecResult, SandboxLimits } from "./types.js";

const PIPE_GRACE_MS = 250;
const O_CLOEXEC = 0o2000000;

/** What `runProcess` spawns: an argv whose whole tree dies with its process group's leader. */
export interface ProcessSpec {
  argv: readonly string[];
  env: Record<string, string>;
  cwd?: string;
  stdin: string;
  /** Data for descriptors 3, 4, … of the child: each a pipe, written and closed. */
  fds?: readonly Uint8Array[];
  limits: SandboxLimits;
  signal?: AbortSignal;
}

/**
 * Spawns the argv in its own process group and waits for it: stdout and stderr are read to the
 * end, the first `maxOutputBytes` of each kept and all counted; at the wall-time limit or on
 * abort the group is killed with SIGKILL (for bubblewrap that is bwrap itself, whose death takes
 * the sandbox's pid namespace, and so every process in it, along). When the leader exits the
 * group is killed too, so nothing it left behind in its group outlives the call. The child gets
 * no descriptor of ours but its stdio and `fds`: one that this process inherited without
 * close-on-exec (a parent's pipe, say) is /dev/null in the child.
 */
export function runProcess(spec: ProcessSpec): Promise<ExecResult> {
  const { spawn } = process.getBuiltinModule("node:child_process");
  const started = performance.now();
  const [file, ...args] = spec.argv;
  return new Promise((resolve, reject) => {
    if (spec.signal?.aborted) {
      resolve(empty({ aborted: true }));
      return;
    }
    const { stdio, close } = childStdio(spec.fds?.length ?? 0);
    let child: ChildProcessWithoutNullStreams;
    try {
      child = spawn(file!, args, {
        env: spec.env,
        ...(spec.cwd === undefined ? {} : { cwd: spec.cwd }),
        detached: true,
        stdio,
      }) as ChildProcessWithoutNullStreams;
    } finally {
      close();
    }
    spec.fds?.forEach((data, i) => {
      const pipe = child.stdio[3 + i] as Duplex;
      pipe.on("error", () => {});
      // Read to its end too: the child's close only counts once every pipe of it is closed.
      pipe.resume();
      pipe.end(data);
    });
    const out = keep(spec.limits.maxOutputBytes);
    const err = keep(spec.limits.maxOutputBytes);
    child.stdout.on("data", out.push);
    child.stderr.on("data", err.push);
    child.stdin.on("error", () => {});
    let timedOut = false;
    let aborted = false;
    const timer = setTimeout(() => {
      timedOut = true;
      killGroup(child);
    }, spec.limits.timeoutMs);
    const onAbort = (): void => {
      aborted = true;
      killGroup(child);
    };
    spec.signal?.addEventListener("abort", onAbort, { once: true });
    child.on("error", (error) => {
      clearTimeout(timer);
      spec.signal?.removeEventListener("abort", onAbort);
      reject(error);
    });
    child.on("exit", () => {
      killGroup(child);
      // A process that left the group (setsid: possible only unsandboxed, under kind "none") may
      // hold the pipes open: stop reading after a grace period rather than wait for it.
      setTimeout(() => {
        child.stdout.destroy();
        child.stderr.destroy();
      }, PIPE_GRACE_MS).unref();
    });
    child.on("close", (code, exitSignal) => {
      clearTimeout(timer);
      spec.signal?.removeEventListener("abort", onAbort);
      resolve({
        exitCode: code,
        signal: exitSignal,
        timedOut,
        aborted,
        stdout: out.text(),
        stderr: err.text(),
        stdoutBytes: out.bytes(),
        stderrBytes: err.bytes(),
        durationMs: Math.round(performance.now() - started),
      });
    });
    child.stdin.end(spec.stdin);
  });
}

/**
 * The child's stdio: pipes for 0–2 and the extra descriptors, and /dev/null over every
 * descriptor this process holds without close-on-exec, which the child would otherwise inherit.
 * `close` drops our /dev/null once the child is spawned.
 */
function childStdio(extra: number): { stdio: StdioOptions; close: () => void } {
  const { closeSync, openSync } = process.getBuiltinModule("node:fs");
  const piped = 3 + extra;
  const stray = inheritedDescriptors().filter((fd) => fd >= piped);
  const stdio: ("pipe" | "ignore" | number)[] = Array.from({ length: piped }, () => "pipe");
  if (stray.length === 0) return { stdio, close: () => {} };
  // Read-only: a write to it fails, as to a closed descriptor.
  const devNull = openSync("/dev/null", "r");
  for (let fd = piped; fd <= Math.max(...stray); fd++) {
    stdio.push(stray.includes(fd) ? devNull : "ignore");
  }
  return { stdio, close: () => closeSync(devNull) };
}

/** Our descriptors above stderr without close-on-exec (Node opens its own with it). */
function inheritedDescriptors(): number[] {
  const { readdirSync, readFileSync } = process.getBuiltinModule("node:fs");
  let names: string[];
  try {
    names = readdirSync("/proc/self/fd");
  } catch {
    return [];
  }
  return names
    .map(Number)
    .filter((fd) => fd > 2)
    .filter((fd) => {
      try {
        const flags = /^flags:\s*([0-7]+)$/m.exec(readFileSync(`/proc/self/fdinfo/${fd}`, "utf8"));
        return flags !== null && (Number.parseInt(flags[1]!, 8) & O_CLOEXEC) === 0;
      } catch {
        // Closed meanwhile (the directory's own descriptor, for one).
        return false;
      }
    });
}

function empty(over: Partial<ExecResult>): ExecResult {
  return {
    exitCode: null,
    signal: null,
    timedOut: false,
    aborted: false,
    stdout: "",
    stderr: "",
    stdoutBytes: 0,
    stderrBytes: 0,
    durationMs: 0,
    ...over,
  };
}

function killGroup(child: ChildProcess): void {
  if (child.pid === undefined) return;
  try {
    process.kill(-child.pid, "SIGKILL");
  } catch {
    // The group is gone already.
  }
}

function keep(max: number) {
  const chunks: Buffer[] = [];
  let kept = 0;
  let total = 0;
  return {
    push: (chunk: Buffer): void => {
      total += chunk.length;
      if (kept >= max) return;
      const part = chunk.length > max - kept ? chunk.subarray(0, max - kept) : chunk;
      chunks.push(part);
      kept += part.length;
    },
    text: (): string => Buffer.concat(chunks).toString("utf8"),
    bytes: (): number => total,
  };
}
