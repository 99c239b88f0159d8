import type { Command } from "commander";
import { jsonOption } from "./options.js";

/** Declares `stet merge` on the program; its action loads `commands/merge.ts` when it runs. */
export function registerMerge(program: Command): void {
  program
    .command("merge")
    .description("merge EvalPort ResultSets (or Results JSONL) of one run into one ResultSet")
    .argument("<files...>", "ResultSet .json or Results .jsonl files of the same run")
    .requiredOption("-o, --output <file>", "where to write the merged ResultSet")
    .option("--prefer <file>", "the input whose result wins collisions timestamps cannot decide")
    .option("--suite <suite.json>", "the EvalPort suite: the merge is partial until it covers it")
    .addOption(jsonOption())
    .action(async (files: string[], flags) => {
      process.exitCode = await (await import("../commands/merge.js")).mergeCommand(files, flags);
    });
}
