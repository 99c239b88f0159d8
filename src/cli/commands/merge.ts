import { resolve } from "node:path";
import { StetError } from "../../core/errors.js";
import { formatValidationError } from "../../evalport/format-validation-error.js";
import { isPartial } from "../../evalport/is-partial.js";
import { mergeResultSets, type MergeInput } from "../../evalport/merge-result-sets.js";
import { readMergeInput, readSuiteIds } from "../../evalport/read-merge-input.js";
import type { ValidationError } from "../../evalport/validation-types.js";
import { writeFileAtomic } from "../../durable/write-file-atomic.js";
import { createIo } from "../io.js";
import { prepareOutputFile } from "../output-file.js";

export interface MergeFlags {
  output: string;
  prefer?: string;
  suite?: string;
  json?: boolean;
}

/**
 * `stet merge <a> <b> … -o <out>`: validates every input (reporting all problems), merges
 * them (`mergeResultSets`) and writes the result atomically. Any refusal exits 1 with nothing
 * written.
 */
export async function mergeCommand(files: string[], flags: MergeFlags): Promise<number> {
  const io = createIo(flags.json ?? false);
  const prefer =
    flags.prefer === undefined ? undefined : files.find((f) => sameFile(f, flags.prefer!));
  if (flags.prefer !== undefined && prefer === undefined) {
    throw new StetError("E_USAGE", `--prefer ${flags.prefer} is not one of the inputs`);
  }
  const inputs: MergeInput[] = [];
  const errors: ValidationError[] = [];
  for (const file of files) {
    const read = await readMergeInput(file);
    if (read.ok) inputs.push(read.input);
    else errors.push(...read.errors);
  }
  if (errors.length > 0) {
    for (const e of errors) io.stderr.write(`${formatValidationError(e)}\n`);
    throw new StetError(
      "E_INVALID_INPUT",
      `${errors.length} problem(s) in the inputs; nothing was written`,
    );
  }
  const suite = flags.suite === undefined ? undefined : await readSuiteIds(flags.suite);
  const merged = mergeResultSets(inputs, {
    ...(prefer !== undefined && { prefer }),
    ...(suite !== undefined && { suiteIds: suite.testCaseIds, suiteId: suite.id }),
  });
  await prepareOutputFile(flags.output, "-o");
  await writeFileAtomic(flags.output, `${JSON.stringify(merged, null, 2)}\n`);
  const partial = isPartial(merged);
  if (flags.json) {
    const summary = {
      output: flags.output,
      results: merged.results.length,
      partial,
      run_id: merged.run_id,
    };
    io.stdout.write(`${JSON.stringify(summary)}\n`);
  }
  io.say(
    `merged ${files.length} files of run ${merged.run_id}: ${merged.results.length} results → ${flags.output}${partial ? " (partial)" : ""}`,
  );
  return 0;
}

function sameFile(a: string, b: string): boolean {
  return a === b || resolve(a) === resolve(b);
}
