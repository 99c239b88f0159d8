import type { Command } from "commander";
import { jsonOption } from "./options.js";

/** Declares `stet validate` on the program; its action loads `commands/validate.ts` when it runs. */
export function registerValidate(program: Command): void {
  program
    .command("validate")
    .description("validate an EvalPort suite, test cases or ResultSet (.json or .jsonl)")
    .argument("<file>")
    .addOption(jsonOption())
    .action(async (file: string, flags) => {
      process.exitCode = await (
        await import("../commands/validate.js")
      ).validateCommand(file, flags);
    });
}
