import type { Command } from "commander";
import { bounded, modelName, sampleIds } from "../flag-values.js";
import {
  storeOption,
  jsonOption,
  maxCostOption,
  loadTimeoutOption,
  batchOption,
  cacheOptions,
  rateOptions,
} from "./options.js";

/** Declares `stet resume` on the program; its action loads `commands/resume.ts` when it runs. */
export function registerResume(program: Command): void {
  program
    .command("resume")
    .description("continue a run: execute only the keys without a scored attempt")
    .argument("<run-id>")
    .option("--rerun-changed", "re-run samples whose content changed since the run started")
    .option("--no-rerun-errors", "keep errored keys as they are")
    .option(
      "--rerun <ids>",
      "execute these samples' keys again as new attempts (comma-separated sample ids; repeatable)",
      sampleIds,
    )
    .option("--rerun-failed", "execute again every key whose outcome scores below 1 on a scorer")
    .option(
      "--rerun-limited",
      "execute again every key whose outcome a per-sample limit ended, as new attempts",
    )
    .option(
      "--allow-eval-change",
      "go on although the eval's solver (model, parameters) changed since the run started; recorded in its history (changed scorers: stet rescore first)",
    )
    .option(
      "--model <model>",
      "must be the run's model (a resume never switches models)",
      modelName,
    )
    .option("--eval <file>", "the eval file, when it moved since the run started")
    .option(
      "--fail-under <score>",
      "exit 4 when a scorer's mean is below this",
      bounded("failUnder"),
    )
    .option(
      "--output <file>",
      "append Results to this file instead of the one the run was started with (--output)",
    )
    .option(
      "--prune-journal",
      "afterwards, delete the step journal of the run's finished attempts (their trajectories)",
    )
    .addOption(
      maxCostOption(
        "cap on the run's total spend in US dollars, instead of the one it was started with; exit 6 at the cap",
      ),
    )
    .addOption(cacheOptions()[0]!)
    .addOption(cacheOptions()[1]!)
    .addOption(rateOptions()[0]!)
    .addOption(rateOptions()[1]!)
    .addOption(batchOption())
    .option(
      "--detach",
      "submit what is left in provider batches, then exit 0 once they exist; a later `stet resume` collects them",
    )
    .addOption(loadTimeoutOption())
    .addOption(storeOption())
    .addOption(jsonOption())
    .action(async (runId: string, flags) => {
      process.exitCode = await (await import("../commands/resume.js")).resumeCommand(runId, flags);
    });
}
