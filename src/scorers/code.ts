import type { Scorer, ScorerArgs, ScoreValue } from "../core/eval.js";
import { StetError } from "../core/errors.js";
import type { Json } from "../core/json.js";
import { createSandbox, USES_SANDBOX } from "../sandbox/index.js";
import type {
  ExecResult,
  Sandbox,
  SandboxConfig,
  SandboxLimits,
  UsesSandbox,
} from "../sandbox/index.js";

export interface CodeOptions {
  /** argv that runs the program, which arrives on stdin: e.g. `["python3", "-"]` (resolved inside the sandbox). */
  command: readonly string[];
  /** The program's text, e.g. HumanEval's prompt + completion + tests + `check(entry_point)`. */
  program: (args: { sample: ScorerArgs["sample"]; output: Json }) => string | Promise<string>;
  /** Wall time of one execution; default the sandbox's (10 s). */
  timeoutMs?: number;
  /** Other limits of one execution (memory, CPU, processes, output bytes). */
  limits?: Partial<Omit<SandboxLimits, "timeoutMs">>;
  /**
   * The score from the execution; default: exit 0 scores 1, anything else (a timeout too) 0.
   * It may throw to record a scorer error.
   */
  score?: (result: ExecResult) => ScoreValue;
  /**
   * This scorer's own sandbox; by default it uses the eval's (`sandbox` on defineEval, else
   * bubblewrap), which the run checks before it starts.
   */
  sandbox?: SandboxConfig;
  /** Default "code". */
  name?: string;
}

/** Characters of stdout and stderr kept in the score's metadata (the end of each). */
const TAIL = 2000;

/**
 * Runs a program built from the sample and the output in the eval's sandbox and scores it by how
 * it ended: exit 0 scores 1, a failing exit, a signal or a timeout 0. The score's metadata holds
 * the exit code, signal, timeout, duration, the tails of stdout and stderr and their byte counts.
 * Used outside an eval (no sandbox handed in) it makes its own from `sandbox`, bubblewrap by default.
 *
 * @example
 * scorers.code({
 *   command: ["python3", "-"],
 *   program: ({ sample, output }) => `${sample.input}${output}\n\n${sample.metadata?.test}\ncheck(${sample.metadata?.entry_point})\n`,
 *   timeoutMs: 10_000,
 * })
 */
export function code(options: CodeOptions): Scorer & UsesSandbox<Scorer> {
  if (!Array.isArray(options.command) || options.command.length === 0) {
    throw new StetError(
      "E_CONFIG",
      'scorers.code needs a command: a non-empty argv such as ["python3", "-"]',
    );
  }
  if (typeof options.program !== "function") {
    throw new StetError(
      "E_CONFIG",
      "scorers.code needs program: ({ sample, output }) => source text",
    );
  }
  const own = options.sandbox === undefined ? undefined : createSandbox(options.sandbox);
  return withSandbox(options, own);
}

function withSandbox(
  options: CodeOptions,
  sandbox: Sandbox | undefined,
): Scorer & UsesSandbox<Scorer> {
  const name = options.name ?? "code";
  // Checked once, on first use (a check already made, by resolveEval, is cached and immediate).
  let ready: Promise<Sandbox> | undefined;
  return {
    name,
    describe: () => ({
      kind: "code",
      command: [...options.command],
      ...(options.timeoutMs === undefined ? {} : { timeoutMs: options.timeoutMs }),
      ...(options.limits === undefined ? {} : { limits: { ...options.limits } }),
      ...(options.sandbox === undefined
        ? {}
        : { sandbox: { ...createSandbox(options.sandbox).describe() } }),
    }),
    score: async ({ sample, output, ctx }) => {
      const box = await (ready ??= checked(sandbox ?? createSandbox()));
      const stdin = await options.program({ sample, output });
      const result = await box.exec({
        command: options.command,
        stdin,
        signal: ctx.signal,
        limits: {
          ...options.limits,
          ...(options.timeoutMs === undefined ? {} : { timeoutMs: options.timeoutMs }),
        },
      });
      if (result.aborted) throw ctx.signal.reason ?? new Error("aborted");
      const metadata = executionMetadata(result);
      if (options.score !== undefined) {
        const value = options.score(result);
        if (typeof value === "object")
          return { ...value, metadata: { ...metadata, ...value.metadata } };
        return { value, metadata };
      }
      return {
        value: result.exitCode === 0 ? 1 : 0,
        explanation: explain(result),
        metadata,
      };
    },
    // The eval's sandbox wins only when the scorer has none of its own.
    [USES_SANDBOX]: async (evalSandbox: () => Promise<Sandbox>) =>
      withSandbox(
        options,
        sandbox === undefined || options.sandbox === undefined
          ? await evalSandbox()
          : await checked(sandbox),
      ),
  };
}

async function checked(sandbox: Sandbox): Promise<Sandbox> {
  await sandbox.check();
  return sandbox;
}

/** What the score records of an execution. */
export function executionMetadata(result: ExecResult): Record<string, Json> {
  return {
    exitCode: result.exitCode,
    signal: result.signal,
    timedOut: result.timedOut,
    durationMs: result.durationMs,
    stdout: result.stdout.slice(-TAIL),
    stderr: result.stderr.slice(-TAIL),
    stdoutBytes: result.stdoutBytes,
    stderrBytes: result.stderrBytes,
  };
}

function explain(result: ExecResult): string {
  if (result.timedOut) return "timed out";
  if (result.exitCode === 0) return "exited 0";
  return result.exitCode === null
    ? `killed by ${result.signal}`
    : `exited with code ${result.exitCode}`;
}
