import { Command, CommanderError } from "commander";
import { isStetError } from "../core/errors.js";
import { withHint } from "./error-hints.js";
import { EXIT, exitCodeForError } from "./exit-codes.js";
import { printable } from "./printable.js";
import { registerBackup, registerRestore } from "./program/backup.js";
import { registerCache } from "./program/cache.js";
import { registerCancel } from "./program/cancel.js";
import { registerDiff } from "./program/diff.js";
import { registerExport } from "./program/export.js";
import { registerImport } from "./program/import.js";
import { registerInit } from "./program/init.js";
import { registerList } from "./program/list.js";
import { registerMerge } from "./program/merge.js";
import { registerPlan } from "./program/plan.js";
import { registerRescore } from "./program/rescore.js";
import { registerResume } from "./program/resume.js";
import { registerRun } from "./program/run.js";
import { registerServe } from "./program/serve.js";
import { registerReview } from "./program/review.js";
import { registerShow } from "./program/show.js";
import { registerValidate } from "./program/validate.js";
import { registerWorker } from "./program/worker.js";

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

  registerRun(program);
  registerPlan(program);
  registerInit(program);
  registerWorker(program);
  registerResume(program);
  registerRescore(program);
  registerList(program);
  registerShow(program);
  registerReview(program);
  registerServe(program);
  registerCancel(program);
  registerCache(program);
  registerDiff(program);
  registerExport(program);
  registerImport(program);
  registerBackup(program);
  registerRestore(program);
  registerMerge(program);
  registerValidate(program);
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
