import type { Command } from "commander";
import { storeOption, jsonOption, repeated } from "./options.js";

/** Declares `stet list` on the program; its action loads `commands/list.ts` when it runs. */
export function registerList(program: Command): void {
  program
    .command("list")
    .description("runs with status and progress")
    .option(
      "--label <key=value>",
      "only runs carrying this label (repeatable, or comma-separated: every one must match)",
      repeated,
    )
    .addOption(storeOption())
    .addOption(jsonOption())
    .action(async (flags) => {
      process.exitCode = await (await import("../commands/list.js")).listCommand(flags);
    });
}
