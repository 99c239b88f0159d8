import type { Command } from "commander";
import { bounded } from "../flag-values.js";
import { jsonOption, loadTimeoutOption, storeOption } from "./options.js";

/** Declares `stet plan` on the program; its action loads `commands/plan.ts` when it runs. */
export function registerPlan(program: Command): void {
  program
    .command("plan")
    .description(
      "what a run of the eval would reuse, score again and execute, and why each key would not be reused; runs nothing",
    )
    .argument("<eval>", "eval module (.ts, .mts, .js, .mjs) or EvalPort suite .json")
    .option(
      "--reuse <run>",
      "the run to reuse from: a run id, or latest (default the eval's reuse)",
    )
    .option("--model <model>", "model override, as for stet run")
    .option("--epochs <n>", "repetitions of every sample, as for stet run", bounded("epochs"))
    .option("--limit <n>", "only the first n samples, as for stet run", bounded("limit"))
    .addOption(loadTimeoutOption())
    .addOption(storeOption())
    .addOption(jsonOption())
    .action(async (target: string, flags) => {
      process.exitCode = await (await import("../commands/plan.js")).planCommand(target, flags);
    });
}
