import type { Command } from "commander";
import { storeOption, jsonOption } from "./options.js";

/** Declares `stet backup` on the program; its action loads `commands/backup.ts` when it runs. */
export function registerBackup(program: Command): void {
  program
    .command("backup")
    .description(
      "write a consistent copy of the store (safe while runs write) and print its sha256",
    )
    .requiredOption("-o, --output <file>", "the backup file")
    .addOption(storeOption())
    .addOption(jsonOption())
    .action(async (flags) => {
      process.exitCode = await (await import("../commands/backup.js")).backupCommand(flags);
    });
}

/** Declares `stet restore` on the program; its action loads `commands/backup.ts` when it runs. */
export function registerRestore(program: Command): void {
  program
    .command("restore")
    .description("restore a backup as a new store, after checking its sha256")
    .argument("<file>", "a file written by stet backup")
    .requiredOption("--sha256 <hex>", "the sha256 stet backup printed")
    .addOption(storeOption())
    .addOption(jsonOption())
    .action(async (file: string, flags) => {
      process.exitCode = await (await import("../commands/backup.js")).restoreCommand(file, flags);
    });
}
