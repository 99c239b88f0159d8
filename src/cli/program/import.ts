import type { Command } from "commander";
import { storeOption, jsonOption } from "./options.js";

/** Declares `stet import` on the program; its action loads `commands/import.ts` when it runs. */
export function registerImport(program: Command): void {
  program
    .command("import")
    .description("restore completed work from a ResultSet, Results JSONL or fallback JSONL")
    .argument("<file>", "resultset.json, results.jsonl or <run>.fallback.jsonl")
    .requiredOption("--into <run-id>", "the run to restore into")
    .option("--sha256 <hex>", "refuse unless the file's bytes have this sha256")
    .addOption(storeOption())
    .addOption(jsonOption())
    .action(async (file: string, flags) => {
      process.exitCode = await (await import("../commands/import.js")).importCommand(file, flags);
    });
}
