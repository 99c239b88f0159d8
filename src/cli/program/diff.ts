import type { Command } from "commander";
import { storeOption, jsonOption } from "./options.js";

/** Declares `stet diff` on the program; its action loads `commands/diff.ts` when it runs. */
export function registerDiff(program: Command): void {
  program
    .command("diff")
    .description(
      "compare two runs sample by sample: per scorer the delta (B − A), its 95% interval, a p-value and the regressed samples",
    )
    .argument("<run-a>", "the baseline run")
    .argument("<run-b>", "the run compared with it")
    .option("--fail-on-regression", "exit 4 when a scorer regressed significantly (p < 0.05)")
    .option(
      "--allow-different-evals",
      "compare runs of two different evals (refused otherwise: their samples do not pair)",
    )
    .addOption(storeOption())
    .addOption(jsonOption())
    .action(async (runA: string, runB: string, flags) => {
      process.exitCode = await (await import("../commands/diff.js")).diffCommand(runA, runB, flags);
    });
}
