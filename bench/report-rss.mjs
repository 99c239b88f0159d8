// Preloaded into a benchmarked CLI process: prints its peak RSS on exit.
import { writeSync } from "node:fs";

process.on("exit", () => {
  writeSync(2, `\nbench:maxrss_kb=${process.resourceUsage().maxRSS}\n`);
});
