import type { Command } from "commander";
import { storeOption, jsonOption } from "./options.js";

/** Declares `stet show` on the program; its action loads `commands/show.ts` when it runs. */
export function registerShow(program: Command): void {
  program
    .command("show")
    .description("one run: status, owner, metrics, cost, errors")
    .argument("<run-id>")
    .option("--sample <id>", "every attempt of this sample (its history), the outcomes marked")
    .addOption(storeOption())
    .addOption(jsonOption())
    .action(async (runId: string, flags) => {
      process.exitCode = await (await import("../commands/show.js")).showCommand(runId, flags);
    });
}
