import { readFile } from "node:fs/promises";
import { dirname, resolve } from "node:path";
import { StetError } from "../core/errors.js";
import { defineEval } from "../eval/define-eval.js";
import type { SandboxConfig } from "../sandbox/index.js";
import type { LoadedEvalFile } from "../eval/load-eval-file.js";
import { formatValidationError } from "./format-validation-error.js";
import type { GraderHandler } from "./run-grader.js";
import { suiteSchema, testCaseSchema, type Suite, type SuiteTestCase } from "./suite-schema.js";
import { suiteScorers } from "./suite-scorers.js";
import { suiteEndpoint, suiteSolver } from "./suite-solver.js";
import { testCaseSample } from "./test-case-sample.js";
import { validateFile } from "./validate-file.js";

export interface LoadSuiteOptions {
  /** Scorers for `custom` and framework-specific grader types, by `params.handler` or type. */
  handlers?: Readonly<Record<string, GraderHandler>>;
}

export interface LoadedSuite extends LoadedEvalFile {
  suite: Suite;
}

/** How many validation errors a refusal lists before summing up the rest. */
const SHOWN_ERRORS = 20;

/**
 * Loads an EvalPort suite JSON file as an eval. The suite (and its `test_cases_file`, JSONL
 * relative to the suite) is validated first; an invalid one is refused with StetError
 * `E_INVALID_INPUT` listing every problem as `file:line:col: /path: message [code]`, before
 * anything runs. Test cases become samples (`expected_output` is the target), the graders
 * become scorers (see `suiteScorers`), `config.provider` the chat solver's defaults (see
 * `suiteSolver`), `config.parallel` the concurrency. The eval is named after the suite id.
 *
 * @example
 * const { eval: ev, baseDir } = await loadSuite("suites/qa.json");
 * await runEval({ store, eval: await resolveEval(ev, { baseDir }), model: "gpt-4o-mini" });
 */
/** The suite metadata key that sets the eval's sandbox, e.g. `{ "kind": "bubblewrap", "memoryMb": 512 }`. */
export const SANDBOX_KEY = "stet.sandbox";

export async function loadSuite(
  file: string,
  options: LoadSuiteOptions = {},
): Promise<LoadedSuite> {
  const path = resolve(file);
  const validation = await validateFile(path, { kind: "suite" });
  if (!validation.valid) {
    const shown = validation.errors
      .slice(0, SHOWN_ERRORS)
      .map((e) => `  ${formatValidationError(e)}`);
    const more = validation.errors.length - shown.length;
    throw new StetError(
      "E_INVALID_INPUT",
      `${path} is not a valid EvalPort suite:\n${shown.join("\n")}${more > 0 ? `\n  … and ${more} more` : ""}`,
      { details: { errors: validation.errors } },
    );
  }
  const baseDir = dirname(path);
  const suite = suiteSchema.parse(JSON.parse(await readText(path)));
  const testCases = await readTestCases(suite, baseDir);
  const ev = defineEval({
    name: suite.id,
    dataset: testCases.map(testCaseSample),
    solver: suiteSolver(suite),
    scorers: suiteScorers(suite.graders ?? [], testCases, {
      endpoint: suiteEndpoint(suite),
      ...(options.handlers === undefined ? {} : { handlers: options.handlers }),
    }),
    ...(suite.config?.parallel === undefined ? {} : { concurrency: suite.config.parallel }),
    // The eval's `sandbox` (where code graders run), validated by defineEval.
    ...(suite.metadata?.[SANDBOX_KEY] === undefined
      ? {}
      : { sandbox: suite.metadata[SANDBOX_KEY] as unknown as SandboxConfig }),
  });
  return { eval: ev, path, baseDir, suite };
}

/** The inline test cases, or the lines of `test_cases_file` (already validated). */
async function readTestCases(suite: Suite, baseDir: string): Promise<SuiteTestCase[]> {
  if (suite.test_cases !== undefined) return suite.test_cases.map((tc) => testCaseSchema.parse(tc));
  const text = await readText(resolve(baseDir, suite.test_cases_file ?? ""));
  return text
    .split("\n")
    .filter((line) => line.trim() !== "")
    .map((line) => testCaseSchema.parse(JSON.parse(line)));
}

async function readText(path: string): Promise<string> {
  const text = await readFile(path, "utf8");
  return text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
}
