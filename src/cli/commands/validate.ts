import { formatValidationError } from "../../evalport/format-validation-error.js";
import { validateFile } from "../../evalport/validate-file.js";
import { EXIT } from "../exit-codes.js";
import { createIo } from "../io.js";

/**
 * `stet validate <file>`: checks a suite, test case, ResultSet (`.json`) or Results / test
 * cases JSONL against the EvalPort schemas and cross-field rules. Prints one line per problem
 * (`file:line:col: /path: message [code]`), or with `--json` `{ file, valid, kind, errors }`.
 * Exit 0 when valid, 1 when not.
 */
export async function validateCommand(file: string, flags: { json?: boolean }): Promise<number> {
  const io = createIo(flags.json ?? false);
  const result = await validateFile(file);
  if (flags.json) {
    io.stdout.write(`${JSON.stringify({ file, ...result }, null, 2)}\n`);
  } else if (result.valid) {
    io.say(`${file}: valid EvalPort ${result.kind ?? "document"}`);
  } else {
    for (const error of result.errors) io.say(formatValidationError({ file, ...error }));
    const n = result.errors.length;
    io.say(
      `${file}: ${n} problem${n === 1 ? "" : "s"}${result.kind ? ` (as a ${result.kind})` : ""}`,
    );
  }
  return result.valid ? EXIT.ok : EXIT.fatal;
}
