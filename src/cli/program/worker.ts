import type { Command } from "commander";
import { bounded } from "../flag-values.js";
import {
  storeOption,
  jsonOption,
  maxCostOption,
  loadTimeoutOption,
  rateOptions,
} from "./options.js";

/** Declares `stet worker` on the program; its action loads `commands/worker.ts` when it runs. */
export function registerWorker(program: Command): void {
  program
    .command("worker")
    .description(
      "join a distributed run on a shared store and execute keys leased to it; exit 0 when none is left",
    )
    .option(
      "--run <id>",
      "the run to join (default: any open distributed run whose eval loads here)",
    )
    .option("--concurrency <n>", "keys executing at once in this worker", bounded("concurrency"))
    .option(
      "--evals <dir>",
      "directory of eval files, for runs whose eval file is not on this machine",
    )
    .option("--wait", "when nothing is left, keep looking for work until a signal")
    .addOption(
      maxCostOption(
        "cap on the run's total spend (all workers') in US dollars, instead of the run's own; exit 6 at the cap",
      ),
    )
    .addOption(rateOptions()[0]!)
    .addOption(rateOptions()[1]!)
    .addOption(loadTimeoutOption())
    .addOption(storeOption())
    .addOption(jsonOption())
    .action(async (flags) => {
      process.exitCode = await (await import("../commands/worker.js")).workerCommand(flags);
    });
}
