import { spawn, type ChildProcess } from "node:child_process";
import { fileURLToPath } from "node:url";

/** The real `stet` bin (compiled: `npm test` builds first). */
export const STET_BIN = fileURLToPath(new URL("../../bin/stet.js", import.meta.url));

export interface CliResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

export interface CliProcess {
  child: ChildProcess;
  stdout: () => string;
  stderr: () => string;
  /**
   * Resolves with the first match of `pattern` in stdout (or in `from`: the two are separate
   * pipes, so what the process wrote to one before the other may arrive after it).
   */
  waitFor: (
    pattern: RegExp,
    timeoutMs?: number,
    from?: "stdout" | "stderr",
  ) => Promise<RegExpMatchArray>;
  done: Promise<CliResult>;
}

/** Spawns `stet <args>` as a real child process. */
export function startCli(
  args: readonly string[],
  options: { cwd?: string; env?: NodeJS.ProcessEnv } = {},
): CliProcess {
  const child = spawn(process.execPath, [STET_BIN, ...args], {
    cwd: options.cwd,
    env: { ...process.env, NO_COLOR: "1", ...options.env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  child.stdout!.setEncoding("utf8").on("data", (d: string) => (stdout += d));
  child.stderr!.setEncoding("utf8").on("data", (d: string) => (stderr += d));
  const done = new Promise<CliResult>((resolve) => {
    child.on("close", (code, signal) => resolve({ code, signal, stdout, stderr }));
  });
  const waitFor = (pattern: RegExp, timeoutMs = 30_000, from: "stdout" | "stderr" = "stdout") =>
    new Promise<RegExpMatchArray>((resolve, reject) => {
      const stream = child[from]!;
      const check = () => {
        const m = (from === "stdout" ? stdout : stderr).match(pattern);
        if (m) {
          cleanup();
          resolve(m);
        }
      };
      const timer = setTimeout(() => {
        cleanup();
        reject(
          new Error(`timed out waiting for ${pattern}; stdout:\n${stdout}\nstderr:\n${stderr}`),
        );
      }, timeoutMs);
      const onExit = () => {
        check();
        cleanup();
        reject(new Error(`stet exited before ${pattern}; stdout:\n${stdout}\nstderr:\n${stderr}`));
      };
      const cleanup = () => {
        clearTimeout(timer);
        stream.off("data", check);
        child.off("close", onExit);
      };
      stream.on("data", check);
      child.on("close", onExit);
      check();
    });
  return { child, stdout: () => stdout, stderr: () => stderr, waitFor, done };
}

/** Runs `stet <args>` to completion. */
export function runCli(
  args: readonly string[],
  options: { cwd?: string; env?: NodeJS.ProcessEnv } = {},
): Promise<CliResult> {
  return startCli(args, options).done;
}
