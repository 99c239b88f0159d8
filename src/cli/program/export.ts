import { type Command, Option } from "commander";
import { bounded } from "../flag-values.js";
import { storeOption } from "./options.js";

/** Declares `stet export` on the program; its action loads `commands/export.ts` when it runs. */
export function registerExport(program: Command): void {
  program
    .command("export")
    .description("export each key's current outcome")
    .argument("<run-id>")
    .addOption(
      new Option("--format <format>", "output format")
        .choices(["jsonl", "csv", "resultset", "junit", "html", "markdown"])
        .default("jsonl"),
    )
    .option(
      "--pass-threshold <score>",
      "junit/html: a score below this fails its test case (default 1)",
      bounded("passThreshold"),
    )
    .option(
      "--threads <n>",
      "jsonl/csv: threads reading the run (default: one per core up to 4 for 50,000 keys or more; 1 reads in this one)",
      bounded("exportThreads"),
    )
    .option("-o, --output <file>", "write to a file (replaced atomically) instead of stdout")
    .addOption(storeOption())
    .action(async (runId: string, flags) => {
      process.exitCode = await (await import("../commands/export.js")).exportCommand(runId, flags);
    });
}
