import { CommanderError, type Command } from "commander";
import { describe, expect, it } from "vitest";
import { BOUNDS, type BoundName } from "../core/bounds.js";
import { buildProgram } from "./main.js";

// Every numeric flag of every command, with the bound it is parsed against. A new numeric flag
// (a `<n>`, `<ms>`, `<usd>`, `<score>` or `<bytes>` value) fails the first test until it is here.
const NUMERIC_FLAGS: Record<string, Record<string, BoundName>> = {
  run: {
    "--epochs": "epochs",
    "--concurrency": "concurrency",
    "--limit": "limit",
    "--timeout": "timeoutMs",
    "--fail-under": "failUnder",
    "--max-cost": "maxCost",
    "--rpm": "rpm",
    "--tpm": "tpm",
    "--load-timeout": "loadTimeoutMs",
  },
  worker: {
    "--concurrency": "concurrency",
    "--max-cost": "maxCost",
    "--rpm": "rpm",
    "--tpm": "tpm",
    "--load-timeout": "loadTimeoutMs",
  },
  resume: {
    "--fail-under": "failUnder",
    "--max-cost": "maxCost",
    "--rpm": "rpm",
    "--tpm": "tpm",
    "--load-timeout": "loadTimeoutMs",
  },
  rescore: { "--fail-under": "failUnder", "--load-timeout": "loadTimeoutMs" },
  serve: {
    "--port": "port",
    "--max-body": "maxBodyBytes",
    "--max-streams": "maxStreams",
    "--load-timeout": "loadTimeoutMs",
  },
  plan: { "--epochs": "epochs", "--limit": "limit", "--load-timeout": "loadTimeoutMs" },
  cancel: { "--wait": "cancelWaitMs" },
  export: { "--pass-threshold": "passThreshold", "--threads": "exportThreads" },
};

const NUMERIC_VALUE = /<(n|ms|usd|score|bytes)>/;
const ARGUMENTS: Record<string, string[]> = {
  run: ["eval.mjs"],
  plan: ["eval.mjs"],
  resume: ["r_x"],
  rescore: ["r_x"],
  cancel: ["r_x"],
  export: ["r_x"],
};

/**
 * The program with every command's usage errors kept instead of printed, and its actions
 * replaced: a value that got past its parser must not start a run or a server here.
 */
function quietProgram(): { program: Command; errors: string[] } {
  const program = buildProgram();
  const errors: string[] = [];
  for (const command of [program, ...program.commands]) {
    command.configureOutput({ writeErr: (text) => errors.push(text), writeOut: () => {} });
    if (command !== program) {
      command.action(() => {
        throw new Error(`stet ${command.name()}: the action ran`);
      });
    }
  }
  return { program, errors };
}

describe("numeric flags", () => {
  it("every command's numeric flag has a bound", () => {
    const found: Record<string, string[]> = {};
    for (const command of buildProgram().commands) {
      const numeric = command.options
        .filter((o) => NUMERIC_VALUE.test(o.flags))
        .map((o) => o.long!);
      if (numeric.length > 0) found[command.name()] = numeric.sort();
    }
    const listed = Object.fromEntries(
      Object.entries(NUMERIC_FLAGS).map(([name, flags]) => [name, Object.keys(flags).sort()]),
    );
    expect(found).toEqual(listed);
  });

  const cases = Object.entries(NUMERIC_FLAGS).flatMap(([command, flags]) =>
    Object.entries(flags).map(([flag, bound]) => [command, flag, bound] as const),
  );
  it.each(cases)(
    "stet %s %s refuses a value above its bound (usage error)",
    async (command, flag, name) => {
      const bound = BOUNDS[name];
      const above = String(bound.integer ? bound.max + 1 : bound.max * 2);
      const { program, errors } = quietProgram();
      const parsing = program.parseAsync([command, ...(ARGUMENTS[command] ?? []), flag, above], {
        from: "user",
      });
      await expect(parsing).rejects.toBeInstanceOf(CommanderError);
      const message = errors.join("");
      expect(message).toContain(`'${flag}`);
      expect(message).toContain(`'${above}'`);
      expect(message).toContain(String(bound.max));
    },
  );
});
