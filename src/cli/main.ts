import { Command, CommanderError, Option } from "commander";
import { isStetError } from "../core/errors.js";
import { withHint } from "./error-hints.js";
import { EXIT, exitCodeForError } from "./exit-codes.js";
import { bounded, modelName, sampleIds } from "./flag-values.js";
import { printable } from "./printable.js";

/** `stet serve`'s port when `--port` is not given. */
const DEFAULT_PORT = 7477;

const storeOption = () =>
  new Option("--store <path>", "store location (default: $STET_STORE or .stet/stet.db)");
const jsonOption = () => new Option("--json", "print machine-readable JSON on stdout");
/**
 * `--max-cost`, for every command that executes a run's keys (`run`, `resume`, a worker): a cap
 * on the run's total spend (every invocation's), not on this invocation's.
 */
const maxCostOption = (
  what = "cap on the run's total spend in US dollars: at the cap, stop dispatching and exit 6 (resumable)",
) => new Option("--max-cost <usd>", what).argParser(bounded("maxCost"));
/** `--load-timeout`, for every command that loads an eval module. */
const loadTimeoutOption = () =>
  new Option(
    "--load-timeout <ms>",
    "how long loading an eval module may take before it is refused (default 60000)",
  ).argParser(bounded("loadTimeoutMs"));

/**
 * The `stet` program. Actions set `process.exitCode`; nothing below this file exits. Each command
 * module is imported when its command runs, so `stet list` does not load the server, the
 * TypeScript loader or the EvalPort schemas.
 */
export function buildProgram(): Command {
  const program = new Command("stet")
    .description(
      "Evaluation harness whose every finished sample stands: kill a run anywhere, resume it.",
    )
    .version("0.1.0")
    .exitOverride()
    // Commander quotes the argument it refuses: escaped, like every refusal (see `printable`).
    .configureOutput({ outputError: (text, write) => write(printable(text)) })
    .showHelpAfterError("(run with --help for usage)");

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
      "--output <file>",
      "stream each finished sample's EvalPort Result to this .jsonl; the ResultSet to the .json beside it at the end",
    )
    .option(
      "--fail-under <score>",
      "exit 4 when a scorer's mean is below this",
      bounded("failUnder"),
    )
    .option(
      "--distributed",
      "open the run to workers on the shared store (`stet worker`), and work on it as one of them",
    )
    .addOption(maxCostOption())
    .addOption(loadTimeoutOption())
    .addOption(storeOption())
    .addOption(jsonOption())
    .action(async (target: string | undefined, flags) => {
      process.exitCode = await (await import("./commands/run.js")).runCommand(target, flags);
    });

  program
    .command("init")
    .description(
      "scaffold a working eval in a project (a chat eval, its dataset, an npm script), or write a bundled example",
    )
    .argument("[dir]", "the project's folder (default: the current one)")
    .option(
      "--example <name>",
      "write the bundled example examples/<name>/ instead (arithmetic, chat, agent, humaneval)",
    )
    .option("--force", "overwrite files that exist already")
    .addOption(jsonOption())
    .action(async (dir: string | undefined, flags) => {
      process.exitCode = await (await import("./commands/init.js")).initCommand(dir, flags);
    });

  program
    .command("worker")
    .description(
      "join a distributed run on a shared store and execute keys leased to it; exit 0 when none is left",
    )
    .option(
      "--run <id>",
      "the run to join (default: any open distributed run whose eval loads here)",
    )
    .option("--concurrency <n>", "keys executing at once in this worker", bounded("concurrency"))
    .option(
      "--evals <dir>",
      "directory of eval files, for runs whose eval file is not on this machine",
    )
    .option("--wait", "when nothing is left, keep looking for work until a signal")
    .addOption(
      maxCostOption(
        "cap on the run's total spend (all workers') in US dollars, instead of the run's own; exit 6 at the cap",
      ),
    )
    .addOption(loadTimeoutOption())
    .addOption(storeOption())
    .addOption(jsonOption())
    .action(async (flags) => {
      process.exitCode = await (await import("./commands/worker.js")).workerCommand(flags);
    });

  program
    .command("resume")
    .description("continue a run: execute only the keys without a scored attempt")
    .argument("<run-id>")
    .option("--rerun-changed", "re-run samples whose content changed since the run started")
    .option("--no-rerun-errors", "keep errored keys as they are")
    .option(
      "--rerun <ids>",
      "execute these samples' keys again as new attempts (comma-separated sample ids; repeatable)",
      sampleIds,
    )
    .option("--rerun-failed", "execute again every key whose outcome scores below 1 on a scorer")
    .option(
      "--allow-eval-change",
      "go on although the eval's solver (model, parameters) changed since the run started; recorded in its history (changed scorers: stet rescore first)",
    )
    .option(
      "--model <model>",
      "must be the run's model (a resume never switches models)",
      modelName,
    )
    .option("--eval <file>", "the eval file, when it moved since the run started")
    .option(
      "--fail-under <score>",
      "exit 4 when a scorer's mean is below this",
      bounded("failUnder"),
    )
    .option(
      "--output <file>",
      "append Results to this file instead of the one the run was started with (--output)",
    )
    .option(
      "--prune-journal",
      "afterwards, delete the step journal of the run's finished attempts (their trajectories)",
    )
    .addOption(
      maxCostOption(
        "cap on the run's total spend in US dollars, instead of the one it was started with; exit 6 at the cap",
      ),
    )
    .addOption(loadTimeoutOption())
    .addOption(storeOption())
    .addOption(jsonOption())
    .action(async (runId: string, flags) => {
      process.exitCode = await (await import("./commands/resume.js")).resumeCommand(runId, flags);
    });

  program
    .command("rescore")
    .description(
      "score a run's stored outputs again with the eval's scorers: no solver calls, outputs kept",
    )
    .argument("<run-id>")
    .option(
      "--scorer <name>",
      "run only this scorer of the eval (repeatable); the others keep their scores",
      (value: string, previous: string[] | undefined) => [...(previous ?? []), value],
    )
    .option("--only-errors", "score only the keys whose outcome is a scorer error")
    .option("--eval <file>", "the eval whose scorers to use (default: the run's own file)")
    .option(
      "--allow-eval-change",
      "go on although the eval's solver changed since the run started (recorded in its history); another eval's name is refused",
    )
    .option(
      "--fail-under <score>",
      "exit 4 when a scorer's mean is below this",
      bounded("failUnder"),
    )
    .addOption(loadTimeoutOption())
    .addOption(storeOption())
    .addOption(jsonOption())
    .action(async (runId: string, flags) => {
      process.exitCode = await (await import("./commands/rescore.js")).rescoreCommand(runId, flags);
    });

  program
    .command("list")
    .description("runs with status and progress")
    .addOption(storeOption())
    .addOption(jsonOption())
    .action(async (flags) => {
      process.exitCode = await (await import("./commands/list.js")).listCommand(flags);
    });

  program
    .command("show")
    .description("one run: status, owner, metrics, cost, errors")
    .argument("<run-id>")
    .option("--sample <id>", "every attempt of this sample (its history), the outcomes marked")
    .addOption(storeOption())
    .addOption(jsonOption())
    .action(async (runId: string, flags) => {
      process.exitCode = await (await import("./commands/show.js")).showCommand(runId, flags);
    });

  program
    .command("serve")
    .description("HTTP API over the store: list, start, resume, cancel and follow runs")
    .option(
      "--port <n>",
      `port to listen on, 0 for any free one (default ${DEFAULT_PORT})`,
      bounded("port"),
    )
    .option(
      "--host <host>",
      "address to bind; beyond loopback needs STET_TOKEN (32+ characters)",
      "127.0.0.1",
    )
    .option("--evals <dir>", "directory of eval files and suites that POST /api/runs may start")
    .option(
      "--allowed-host <host>",
      "another Host name to answer to (name or name:port; repeatable; also $STET_ALLOWED_HOSTS)",
      (value: string, previous: string[]) => [...previous, value],
      [],
    )
    .option("--max-body <bytes>", "largest request body (default 1048576)", bounded("maxBodyBytes"))
    .option("--max-streams <n>", "event streams open at once (default 100)", bounded("maxStreams"))
    .addOption(loadTimeoutOption())
    .addOption(storeOption())
    .action(async (flags) => {
      process.exitCode = await (
        await import("./commands/serve.js")
      ).serveCommand({ ...flags, port: flags.port ?? DEFAULT_PORT });
    });

  program
    .command("cancel")
    .description("stop a run wherever it executes; it becomes interrupted and resumable")
    .argument("<run-id>")
    .option(
      "--wait <ms>",
      "how long to wait for the run to stop; 0: do not wait",
      bounded("cancelWaitMs"),
    )
    .addOption(storeOption())
    .addOption(jsonOption())
    .action(async (runId: string, flags) => {
      process.exitCode = await (await import("./commands/cancel.js")).cancelCommand(runId, flags);
    });

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
      process.exitCode = await (await import("./commands/diff.js")).diffCommand(runA, runB, flags);
    });

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
    .option("-o, --output <file>", "write to a file (replaced atomically) instead of stdout")
    .addOption(storeOption())
    .action(async (runId: string, flags) => {
      process.exitCode = await (await import("./commands/export.js")).exportCommand(runId, flags);
    });

  program
    .command("import")
    .description("restore completed work from a ResultSet, Results JSONL or fallback JSONL")
    .argument("<file>", "resultset.json, results.jsonl or <run>.fallback.jsonl")
    .requiredOption("--into <run-id>", "the run to restore into")
    .option("--sha256 <hex>", "refuse unless the file's bytes have this sha256")
    .addOption(storeOption())
    .addOption(jsonOption())
    .action(async (file: string, flags) => {
      process.exitCode = await (await import("./commands/import.js")).importCommand(file, flags);
    });

  program
    .command("backup")
    .description(
      "write a consistent copy of the store (safe while runs write) and print its sha256",
    )
    .requiredOption("-o, --output <file>", "the backup file")
    .addOption(storeOption())
    .addOption(jsonOption())
    .action(async (flags) => {
      process.exitCode = await (await import("./commands/backup.js")).backupCommand(flags);
    });

  program
    .command("restore")
    .description("restore a backup as a new store, after checking its sha256")
    .argument("<file>", "a file written by stet backup")
    .requiredOption("--sha256 <hex>", "the sha256 stet backup printed")
    .addOption(storeOption())
    .addOption(jsonOption())
    .action(async (file: string, flags) => {
      process.exitCode = await (await import("./commands/backup.js")).restoreCommand(file, flags);
    });

  program
    .command("merge")
    .description("merge EvalPort ResultSets (or Results JSONL) of one run into one ResultSet")
    .argument("<files...>", "ResultSet .json or Results .jsonl files of the same run")
    .requiredOption("-o, --output <file>", "where to write the merged ResultSet")
    .option("--prefer <file>", "the input whose result wins collisions timestamps cannot decide")
    .option("--suite <suite.json>", "the EvalPort suite: the merge is partial until it covers it")
    .addOption(jsonOption())
    .action(async (files: string[], flags) => {
      process.exitCode = await (await import("./commands/merge.js")).mergeCommand(files, flags);
    });

  program
    .command("validate")
    .description("validate an EvalPort suite, test cases or ResultSet (.json or .jsonl)")
    .argument("<file>")
    .addOption(jsonOption())
    .action(async (file: string, flags) => {
      process.exitCode = await (
        await import("./commands/validate.js")
      ).validateCommand(file, flags);
    });

  return program;
}

function isBrokenPipe(error: unknown): boolean {
  return (error as NodeJS.ErrnoException | null)?.code === "EPIPE";
}

/** Parses argv, runs the command, maps failures to the CLI's exit codes (`EXIT`). */
export async function main(argv: readonly string[]): Promise<number> {
  try {
    await buildProgram().parseAsync([...argv], { from: "user" });
    return typeof process.exitCode === "number" ? process.exitCode : EXIT.ok;
  } catch (error) {
    if (error instanceof CommanderError) {
      // Commander already printed the problem; help and version are not failures.
      return error.exitCode === 0 ? EXIT.ok : EXIT.usage;
    }
    if (isStetError(error)) {
      process.stderr.write(`stet: ${printable(withHint(error))}\n`);
      return exitCodeForError(error.code);
    }
    // The reader of our output went away (`stet export … | head`): nothing is left to say.
    if (isBrokenPipe(error)) return EXIT.ok;
    process.stderr.write(
      `stet: unexpected error: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
    );
    return EXIT.fatal;
  }
}

/** A repeatable option's values, in the order given. */
function repeated(value: string, previous: string[] | undefined): string[] {
  return [...(previous ?? []), value];
}

/** `--model`, repeatable: each a model name (`modelName`). */
function models(value: string, previous: string[] | undefined): string[] {
  return repeated(modelName(value), previous);
}
