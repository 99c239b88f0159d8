import type { Command } from "commander";
import { storeOption, jsonOption, repeated } from "./options.js";

/** Declares `stet diff` on the program; its action loads `commands/diff.ts` when it runs. */
export function registerDiff(program: Command): void {
  program
    .command("diff")
    .description(
      "compare two runs sample by sample: per scorer the delta (B − A), its 95% interval, a p-value and the regressed samples",
    )
    .argument("<run-a>", "the baseline run (with --baseline: the run to compare)")
    .argument("[run-b]", "the run compared with it")
    .option(
      "--baseline <selector>",
      "compare the one run given with a baseline: a run id, latest, or key=value labels (repeatable or comma-separated): the newest complete run of the same eval with a comparable identity and those labels; none found exits 7",
      repeated,
    )
    .option(
      "--common",
      "with --baseline: compare on the samples both runs have when their samples differ (refused otherwise)",
    )
    .option(
      "--format <format>",
      "text (default) or markdown: with --baseline, a report ready for a PR comment (also appended to $GITHUB_STEP_SUMMARY)",
    )
    .option("--fail-on-regression", "exit 4 when a scorer regressed significantly (p < 0.05)")
    .option(
      "--allow-different-evals",
      "compare runs of two different evals (refused otherwise: their samples do not pair)",
    )
    .addOption(storeOption())
    .addOption(jsonOption())
    .action(async (runA: string, runB: string | undefined, flags) => {
      process.exitCode = await (await import("../commands/diff.js")).diffCommand(runA, runB, flags);
    });
}
