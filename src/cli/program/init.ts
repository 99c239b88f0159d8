import type { Command } from "commander";
import { jsonOption } from "./options.js";

/** Declares `stet init` on the program; its action loads `commands/init.ts` when it runs. */
export function registerInit(program: Command): void {
  program
    .command("init")
    .description(
      "scaffold a working eval in a project (a chat eval, its dataset, an npm script), or write a bundled example",
    )
    .argument("[dir]", "the project's folder (default: the current one)")
    .option(
      "--example <name>",
      "write the bundled example examples/<name>/ instead (arithmetic, chat, agent, humaneval)",
    )
    .option("--force", "overwrite files that exist already")
    .addOption(jsonOption())
    .action(async (dir: string | undefined, flags) => {
      process.exitCode = await (await import("../commands/init.js")).initCommand(dir, flags);
    });
}
