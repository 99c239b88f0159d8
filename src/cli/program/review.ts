import type { Command } from "commander";
import { storeOption, jsonOption } from "./options.js";

/** Declares `stet review`; its action loads `commands/review.ts` when it runs. */
export function registerReview(program: Command): void {
  program
    .command("review")
    .description(
      "people's reviews of a run's samples (the human scorer): import or export them as CSV",
    )
    .argument("<run-id>")
    .option(
      "--import <file>",
      "store the reviews of a CSV file (sample_id, epoch, attempt, scorer, reviewer, verdict or value, note): all or none",
    )
    .option(
      "--export [file]",
      "write every review of the run as CSV, history included (stdout without a file)",
    )
    .option(
      "--reviewer <name>",
      "who the imported reviews are by, when a row names nobody (default: $STET_REVIEWER)",
    )
    .addOption(storeOption())
    .addOption(jsonOption())
    .action(async (runId: string, flags) => {
      process.exitCode = await (await import("../commands/review.js")).reviewCommand(runId, flags);
    });
}
