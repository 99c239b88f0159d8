import { readFile } from "node:fs/promises";
import { dirname, resolve } from "node:path";
import * as z from "zod";
import { StetError } from "../core/errors.js";
import { formatValidationError } from "./format-validation-error.js";
import type { MergeInput } from "./merge-result-sets.js";
import type { EvalPortResult, ResultSetDocument } from "./result-set-types.js";
import { validateFile } from "./validate-file.js";
import type { ValidationError } from "./validation-types.js";

/** A merge input read from disk, or every validation problem found in the file. */
export type ReadResult = { ok: true; input: MergeInput } | { ok: false; errors: ValidationError[] };

/**
 * Reads a merge input: a ResultSet (`.json`) or a Results JSONL (`.jsonl`/`.ndjson`, e.g. the
 * `--output` stream). The file is validated first (EvalPort schema and rules); problems are
 * returned, not thrown, so a caller can report every bad input at once. The input is named by
 * the path as given.
 *
 * @example const read = await readMergeInput("a.json"); if (read.ok) inputs.push(read.input);
 */
export async function readMergeInput(path: string): Promise<ReadResult> {
  const lines = /\.(jsonl|ndjson)$/i.test(path);
  const validation = await validateFile(path, { kind: lines ? "result" : "resultset" });
  if (!validation.valid) return { ok: false, errors: validation.errors };
  const text = await readText(path);
  // The text was just validated against the EvalPort ResultSet (or Result) schema.
  const doc = lines
    ? text
        .split("\n")
        .filter((line) => line.trim() !== "")
        .map((line) => JSON.parse(line) as EvalPortResult)
    : (JSON.parse(text) as ResultSetDocument);
  return { ok: true, input: { name: path, doc } };
}

const idsSchema = z.object({ id: z.string() });

/**
 * The test case ids and id of an EvalPort suite (inline `test_cases`, or the lines of
 * `test_cases_file` relative to the suite). An invalid suite is refused with `E_INVALID_INPUT`.
 *
 * @example const { id, testCaseIds } = await readSuiteIds("suite.json");
 */
export async function readSuiteIds(path: string): Promise<{ id: string; testCaseIds: string[] }> {
  const validation = await validateFile(path, { kind: "suite" });
  if (!validation.valid) {
    const shown = validation.errors.slice(0, 20).map((e) => `  ${formatValidationError(e)}`);
    throw new StetError(
      "E_INVALID_INPUT",
      `${path} is not a valid EvalPort suite:\n${shown.join("\n")}`,
      { details: { errors: validation.errors } },
    );
  }
  const suite = z
    .object({
      id: z.string(),
      test_cases: z.array(idsSchema).optional(),
      test_cases_file: z.string().optional(),
    })
    .parse(JSON.parse(await readText(path)));
  const cases =
    suite.test_cases ??
    (await readText(resolve(dirname(path), suite.test_cases_file ?? "")))
      .split("\n")
      .filter((line) => line.trim() !== "")
      .map((line) => idsSchema.parse(JSON.parse(line)));
  return { id: suite.id, testCaseIds: cases.map((c) => c.id) };
}

async function readText(path: string): Promise<string> {
  const text = await readFile(path, "utf8");
  return text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
}
