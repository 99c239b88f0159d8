import * as z from "zod";
import { StetError } from "../core/errors.js";
import { bubblewrap } from "./bubblewrap.js";
import { none } from "./none.js";
import type { Sandbox, SandboxConfig } from "./types.js";

export type { ExecRequest, ExecResult, Sandbox, SandboxConfig, SandboxLimits } from "./types.js";
export { DEFAULT_LIMITS, USES_SANDBOX, usesSandbox } from "./types.js";
export type { UsesSandbox } from "./types.js";
export { sandboxed } from "./sandboxed-solver.js";

const limitFields = {
  timeoutMs: z.number().int().positive().optional(),
  cpuSeconds: z.number().int().positive().optional(),
  memoryMb: z.number().int().positive().optional(),
  maxProcesses: z.number().int().positive().optional(),
  maxOutputBytes: z.number().int().positive().optional(),
  env: z.record(z.string(), z.string()).optional(),
};

/** What `sandbox` on an eval (or a suite) accepts. */
export const sandboxConfigSchema = z.discriminatedUnion("kind", [
  z.strictObject({
    kind: z.literal("bubblewrap"),
    bwrap: z.string().min(1).optional(),
    ...limitFields,
  }),
  z.strictObject({ kind: z.literal("none"), ...limitFields }),
]);

/** The sandbox of an eval that sets none: bubblewrap with the default limits. */
export const DEFAULT_SANDBOX: SandboxConfig = { kind: "bubblewrap" };

/**
 * A sandbox from its config (not yet checked: call `check()` before the run starts). A bad
 * config is E_CONFIG naming the field.
 *
 * @example const sandbox = createSandbox({ kind: "bubblewrap", timeoutMs: 5000 }); await sandbox.check();
 */
export function createSandbox(config: SandboxConfig = DEFAULT_SANDBOX): Sandbox {
  const parsed = sandboxConfigSchema.safeParse(config);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const field = issue?.path.join(".") || "sandbox";
    throw new StetError("E_CONFIG", `invalid sandbox: ${field}: ${issue?.message ?? "invalid"}`);
  }
  return parsed.data.kind === "none" ? none(parsed.data) : bubblewrap(parsed.data);
}
