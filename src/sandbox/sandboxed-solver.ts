import type { SolverContext, SolverFn, SolverReturn } from "../core/eval.js";
import type { Sample } from "../core/types.js";
import { StetError } from "../core/errors.js";
import { USES_SANDBOX, type Sandbox, type UsesSandbox } from "./types.js";

/**
 * A solver that runs programs (an agent's tools): it is handed the eval's sandbox, which the run
 * checks before it starts, as a third argument. Outside a resolved eval it refuses to run.
 *
 * @example
 * solver: sandboxed(async (sample, ctx, sandbox) => {
 *   const result = await sandbox.exec({ command: ["python3", "-c", String(sample.input)], signal: ctx.signal });
 *   return result.stdout.trim();
 * })
 */
export function sandboxed(
  fn: (
    sample: Sample,
    ctx: SolverContext,
    sandbox: Sandbox,
  ) => Promise<SolverReturn> | SolverReturn,
): SolverFn & UsesSandbox<SolverFn> {
  const bind = (sandbox: Sandbox | undefined): SolverFn & UsesSandbox<SolverFn> => {
    const solver: SolverFn = (sample, ctx) => {
      if (sandbox === undefined) {
        throw new StetError(
          "E_CONFIG",
          "a sandboxed solver runs only in an eval resolved by stet (resolveEval hands it the sandbox)",
        );
      }
      return fn(sample, ctx, sandbox);
    };
    // The run's identity tells sandboxed solvers apart by the source of `fn`, not this wrapper's.
    solver.describe = () => ({ kind: "sandboxed", sourceSha256: sourceHash(fn) });
    return Object.assign(solver, {
      [USES_SANDBOX]: async (evalSandbox: () => Promise<Sandbox>) => bind(await evalSandbox()),
    });
  };
  return bind(undefined);
}

function sourceHash(fn: (...args: never[]) => unknown): string {
  const { createHash } = process.getBuiltinModule("node:crypto");
  return createHash("sha256").update(Function.prototype.toString.call(fn)).digest("hex");
}
