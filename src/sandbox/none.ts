import { StetError } from "../core/errors.js";
import { mergeLimits, prlimitArgs } from "./limits.js";
import { runProcess } from "./run-process.js";
import { SANDBOX_PATH } from "./bubblewrap.js";
import type { ExecRequest, ExecResult, Sandbox, SandboxConfig } from "./types.js";

type NoneConfig = Extract<SandboxConfig, { kind: "none" }>;

/**
 * No sandbox, asked for by name: the program runs as you, with your network and files, in a
 * fresh temporary directory that is removed afterwards. The environment is still cleared (PATH,
 * HOME as that directory, LANG, and the config's env), the limits hold through `prlimit`, and its
 * process group is killed at the end; a daemon that left the group survives.
 */
export function none(config: NoneConfig): Sandbox {
  const base = mergeLimits(config);
  return {
    kind: "none",
    check: async () => {},
    exec: async (request: ExecRequest): Promise<ExecResult> => {
      if (request.command.length === 0) throw new StetError("E_CONFIG", "sandbox: empty command");
      const { mkdtempSync, rmSync } = process.getBuiltinModule("node:fs");
      const { tmpdir } = process.getBuiltinModule("node:os");
      const { join } = process.getBuiltinModule("node:path");
      const dir = mkdtempSync(join(tmpdir(), "stet-exec-"));
      const limits = mergeLimits(config, request.limits);
      try {
        return await runProcess({
          argv: ["/usr/bin/prlimit", ...prlimitArgs(limits), "--", ...request.command],
          env: {
            PATH: SANDBOX_PATH,
            HOME: dir,
            TMPDIR: dir,
            LANG: "C.UTF-8",
            ...config.env,
            ...request.env,
          },
          cwd: dir,
          stdin: request.stdin ?? "",
          limits,
          ...(request.signal === undefined ? {} : { signal: request.signal }),
        });
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
    describe: () => ({ kind: "none", ...base }),
  };
}
