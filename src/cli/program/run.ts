import type { Command } from "commander";
import { bounded } from "../flag-values.js";
import {
  storeOption,
  jsonOption,
  maxCostOption,
  batchOption,
  cacheOptions,
  rateOptions,
  loadTimeoutOption,
  repeated,
  models,
} from "./options.js";

/** Declares `stet run` on the program; its action loads `commands/run.ts` when it runs. */
export function registerRun(program: Command): void {
  program
    .command("run")
    .description(
      "start a run of an eval file (or of a dataset with --dataset); with several --model, one run per model as a benchmark",
    )
    .argument(
      "[eval]",
      "eval module (.ts, .mts, .js, .mjs) with a default export, or an EvalPort suite .json",
    )
    .option(
      "--model <model>",
      "model override passed to model-calling solvers; repeat it to run every model (one run each, one benchmark, one table)",
      models,
    )
    .option(
      "--dataset <file>",
      "evaluate this JSONL/JSON/CSV dataset with no eval module: asked of --model through the chat solver (OPENAI_BASE_URL, OPENAI_API_KEY)",
    )
    .option(
      "--scorer <name>",
      "with --dataset: a built-in scorer (exact, exact-ci, includes, includes-ci, numeric, json; default exact); repeatable",
      repeated,
    )
    .option("--system <text>", "with --dataset: the system message")
    .option("--epochs <n>", "repetitions of every sample", bounded("epochs"))
    .option("--concurrency <n>", "samples executing at once", bounded("concurrency"))
    .option("--limit <n>", "only the first n samples", bounded("limit"))
    .option("--timeout <ms>", "per-sample timeout in milliseconds", bounded("timeoutMs"))
    .option("--resume <run-id>", "continue this run instead of starting a new one")
    .option(
      "--run-id <id>",
      "the new run's id (letters, digits, -_. up to 64); run again, it resumes that run or does nothing once complete",
    )
    .option(
      "--allow-eval-change",
      "with --resume or an existing --run-id: go on although the eval's solver changed (recorded in the run's history)",
    )
    .option(
      "--resume-from <file>",
      "seed the new run with the completed results of a (partial) ResultSet or Results JSONL",
    )
    .option(
      "--reuse <run>",
      "reuse the outcomes of an earlier run (a run id, or latest: the newest run of this eval whose identity matches) for every key whose sample is unchanged; only the others execute",
    )
    .option(
      "--watch",
      "run, then run again on every change of the eval file, its local imports or its dataset file, each run reusing the previous one's outcomes so only changed keys execute; Ctrl-C stops",
    )
    .option(
      "--output <file>",
      "stream each finished sample's EvalPort Result to this .jsonl; the ResultSet to the .json beside it at the end",
    )
    .option(
      "--fail-under <score>",
      "exit 4 when a scorer's mean is below this",
      bounded("failUnder"),
    )
    .option(
      "--label <key=value>",
      "a label recorded with the run (repeatable, or comma-separated); git's commit, branch and dirty state, and GitHub Actions' ref, sha, PR and run URL are recorded too",
      repeated,
    )
    .option(
      "--baseline <selector>",
      "once the run ends, compare it with a baseline as `stet diff --baseline` does (a run id, latest, or key=value labels; repeatable)",
      repeated,
    )
    .option(
      "--fail-on-regression",
      "with --baseline: exit 4 when a scorer regressed significantly (p < 0.05)",
    )
    .option(
      "--distributed",
      "open the run to workers on the shared store (`stet worker`), and work on it as one of them",
    )
    .addOption(maxCostOption())
    .addOption(cacheOptions()[0]!)
    .addOption(cacheOptions()[1]!)
    .addOption(rateOptions()[0]!)
    .addOption(rateOptions()[1]!)
    .addOption(batchOption())
    .option(
      "--detach",
      "with --batch: submit the batches, print the run id and exit 0; `stet resume <id>` collects them later",
    )
    .addOption(loadTimeoutOption())
    .addOption(storeOption())
    .addOption(jsonOption())
    .action(async (target: string | undefined, flags) => {
      process.exitCode = await (await import("../commands/run.js")).runCommand(target, flags);
    });
}
