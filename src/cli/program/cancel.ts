import type { Command } from "commander";
import { bounded } from "../flag-values.js";
import { storeOption, jsonOption } from "./options.js";

/** Declares `stet cancel` on the program; its action loads `commands/cancel.ts` when it runs. */
export function registerCancel(program: Command): void {
  program
    .command("cancel")
    .description("stop a run wherever it executes; it becomes interrupted and resumable")
    .argument("<run-id>")
    .option(
      "--wait <ms>",
      "how long to wait for the run to stop; 0: do not wait",
      bounded("cancelWaitMs"),
    )
    .addOption(storeOption())
    .addOption(jsonOption())
    .action(async (runId: string, flags) => {
      process.exitCode = await (await import("../commands/cancel.js")).cancelCommand(runId, flags);
    });
}
