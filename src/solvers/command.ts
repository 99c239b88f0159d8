import type { ChildProcess, ChildProcessWithoutNullStreams } from "node:child_process";
import type { SolverContext, SolverFn, SolverResult } from "../core/eval.js";
import type { Sample } from "../core/types.js";
import { abortReason } from "./backoff.js";
import { SolverError } from "./solver-error.js";

export interface CommandSolverOptions {
  /** The program to run (looked up on PATH; no shell unless you run one). */
  command: string;
  args?: string[];
  /** Kill the process tree and fail the attempt with a timeout after this long. */
  timeoutMs?: number;
  cwd?: string;
  /** Added to the inherited environment. */
  env?: Record<string, string>;
}

const STDERR_TAIL = 2000;

/**
 * A solver that runs one process per sample: the input on stdin (strings as is, other JSON
 * stringified), the output from stdout (one trailing newline trimmed). The process gets
 * STET_SAMPLE_ID and STET_EPOCH (and STET_MODEL under `--model`) in its environment. A non-zero
 * exit or a timeout fails the attempt; on timeout, abort or exit the whole process group is killed.
 *
 * @example solvers.command({ command: "python3", args: ["agent.py"], timeoutMs: 60_000 });
 */
export function command(options: CommandSolverOptions): SolverFn {
  const solver: SolverFn = (sample, ctx) => runCommand(options, sample, ctx);
  solver.describe = () => ({
    kind: "command",
    command: options.command,
    args: options.args ?? [],
    ...(options.timeoutMs === undefined ? {} : { timeoutMs: options.timeoutMs }),
    ...(options.cwd === undefined ? {} : { cwd: options.cwd }),
  });
  return solver;
}

function runCommand(
  options: CommandSolverOptions,
  sample: Sample,
  ctx: SolverContext,
): Promise<SolverResult> {
  const { signal } = ctx;
  if (signal.aborted) return Promise.reject(abortReason(signal));
  const name = [options.command, ...(options.args ?? [])].join(" ");
  return new Promise((resolve, reject) => {
    // Loaded on first use: an eval without a command solver never pays for child_process.
    const { spawn } = process.getBuiltinModule("node:child_process");
    const child = spawn(options.command, options.args ?? [], {
      cwd: options.cwd,
      env: { ...process.env, ...options.env, ...stetEnv(sample, ctx) },
      // Its own process group, so that killing -pid reaches every descendant.
      detached: true,
      stdio: ["pipe", "pipe", "pipe"],
    });
    const output = collect(child);
    let settled = false;
    const settle = (error: Error | undefined, result?: SolverResult): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      signal.removeEventListener("abort", onAbort);
      if (error === undefined && result !== undefined) resolve(result);
      else reject(error);
    };
    const onAbort = (): void => {
      killGroup(child);
      settle(abortReason(signal));
    };
    const timer =
      options.timeoutMs === undefined
        ? undefined
        : setTimeout(() => {
            killGroup(child);
            settle(new SolverError("timeout", `${name}: no exit within ${options.timeoutMs} ms`));
          }, options.timeoutMs);
    signal.addEventListener("abort", onAbort, { once: true });

    child.on("error", (error) => {
      settle(
        new SolverError("solver", `${name}: cannot start: ${error.message}`, { cause: error }),
      );
    });
    // Descendants left behind would keep stdout open and leak; the group dies with its leader.
    child.on("exit", () => killGroup(child));
    child.on("close", (code, exitSignal) => {
      if (code === 0) return settle(undefined, { output: output.stdout().replace(/\r?\n$/, "") });
      const how = code === null ? `was killed by ${exitSignal}` : `exited with code ${code}`;
      const tail = output.stderrTail().trim();
      settle(new SolverError("solver", `${name} ${how}${tail === "" ? "" : `: ${tail}`}`));
    });
    child.stdin.end(typeof sample.input === "string" ? sample.input : JSON.stringify(sample.input));
  });
}

function killGroup(child: ChildProcess): void {
  if (child.pid === undefined) return;
  try {
    process.kill(-child.pid, "SIGKILL");
  } catch {
    // The group is already gone.
  }
}

function collect(child: ChildProcessWithoutNullStreams): {
  stdout(): string;
  stderrTail(): string;
} {
  const stdout: Buffer[] = [];
  let stderr = "";
  child.stdout.on("data", (chunk: Buffer) => stdout.push(chunk));
  child.stderr.on("data", (chunk: Buffer) => {
    stderr = (stderr + chunk.toString("utf8")).slice(-STDERR_TAIL);
  });
  // A command that exits without reading its input closes the pipe (EPIPE); that is its right.
  child.stdin.on("error", () => {});
  return { stdout: () => Buffer.concat(stdout).toString("utf8"), stderrTail: () => stderr };
}

function stetEnv(sample: Sample, ctx: SolverContext): Record<string, string> {
  return {
    STET_SAMPLE_ID: sample.id,
    STET_EPOCH: String(ctx.epoch),
    ...(ctx.model === undefined ? {} : { STET_MODEL: ctx.model }),
  };
}
