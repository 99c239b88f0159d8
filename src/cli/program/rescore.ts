import type { Command } from "commander";
import { bounded } from "../flag-values.js";
import { storeOption, jsonOption, loadTimeoutOption } from "./options.js";

/** Declares `stet rescore` on the program; its action loads `commands/rescore.ts` when it runs. */
export function registerRescore(program: Command): void {
  program
    .command("rescore")
    .description(
      "score a run's stored outputs again with the eval's scorers: no solver calls, outputs kept",
    )
    .argument("<run-id>")
    .option(
      "--scorer <name>",
      "run only this scorer of the eval (repeatable); the others keep their scores",
      (value: string, previous: string[] | undefined) => [...(previous ?? []), value],
    )
    .option("--only-errors", "score only the keys whose outcome is a scorer error")
    .option("--eval <file>", "the eval whose scorers to use (default: the run's own file)")
    .option(
      "--allow-eval-change",
      "go on although the eval's solver changed since the run started (recorded in its history); another eval's name is refused",
    )
    .option(
      "--fail-under <score>",
      "exit 4 when a scorer's mean is below this",
      bounded("failUnder"),
    )
    .addOption(loadTimeoutOption())
    .addOption(storeOption())
    .addOption(jsonOption())
    .action(async (runId: string, flags) => {
      process.exitCode = await (
        await import("../commands/rescore.js")
      ).rescoreCommand(runId, flags);
    });
}
