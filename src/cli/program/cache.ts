import type { Command } from "commander";
import { olderThan } from "../flag-values.js";
import { storeOption, jsonOption } from "./options.js";

/** Declares `stet cache stats | prune | clear`; each loads `commands/cache.ts` when it runs. */
export function registerCache(program: Command): void {
  const cache = program
    .command("cache")
    .description("the store's reply cache of model calls (an eval's `cache`, `--cache`)");
  const run = (action: "stats" | "prune" | "clear") => async (flags: object) => {
    process.exitCode = await (await import("../commands/cache.js")).cacheCommand(action, flags);
  };
  cache
    .command("stats")
    .description("how many replies the cache holds, their size, the oldest and the newest")
    .addOption(storeOption())
    .addOption(jsonOption())
    .action(run("stats"));
  cache
    .command("prune")
    .description("delete the replies stored longer ago than --older-than")
    .option("--older-than <age>", "an age such as 30d or 12h (default 30d)", olderThan)
    .addOption(storeOption())
    .addOption(jsonOption())
    .action(run("prune"));
  cache
    .command("clear")
    .description("delete every reply of the cache (runs and their journals are untouched)")
    .addOption(storeOption())
    .addOption(jsonOption())
    .action(run("clear"));
}
