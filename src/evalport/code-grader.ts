import type { ScorerArgs, ScoreValue } from "../core/eval.js";
import type { Json } from "../core/json.js";
import { code, executionMetadata } from "../scorers/code.js";
import { USES_SANDBOX, type Sandbox } from "../sandbox/index.js";

/** The spec's default for `params.timeout_ms`. */
export const CODE_GRADER_TIMEOUT_MS = 5000;

const MARK = "\u0000stet-grade\u0000";

export interface CodeGraderParams {
  language: string;
  source: string;
  timeoutMs?: number;
}

/**
 * An EvalPort `code` grader: `params.source` defines `grade(input, output, expected, context)`
 * (Python or JavaScript), run through `scorers.code` in the eval's sandbox with the arguments as
 * JSON data, never as code. Its return (a number in [0, 1] or a boolean) is the score; a
 * failing program, a timeout (`timeout_ms`, default 5000) or another return throws, which the
 * grader runner records as the spec's GRADER_ERROR.
 *
 * @example await codeGraderScore({ language: "python", source: "def grade(i, o, e, c):\n  return o == e" }, args, sandbox)
 */
export async function codeGraderScore(
  params: CodeGraderParams,
  graderId: string,
  args: ScorerArgs,
  sandbox: Sandbox | undefined,
): Promise<ScoreValue> {
  const language = LANGUAGES[params.language];
  if (language === undefined) {
    throw new Error(`code grader: language must be python or javascript, got "${params.language}"`);
  }
  if (sandbox === undefined) throw new Error("code grader: no sandbox was given to this run");
  const data = JSON.stringify({
    input: args.sample.input,
    output: args.output,
    expected: args.sample.target ?? null,
    context: {
      test_case_id: args.sample.id,
      grader_id: graderId,
      metadata: args.sample.metadata ?? {},
    },
  });
  const scorer = await code({
    name: graderId,
    command: language.command,
    program: () => language.program(params.source, JSON.stringify(data)),
    timeoutMs: params.timeoutMs ?? CODE_GRADER_TIMEOUT_MS,
    score: (result) => {
      const metadata = executionMetadata(result);
      if (result.timedOut)
        throw new Error(
          `code grader timed out after ${params.timeoutMs ?? CODE_GRADER_TIMEOUT_MS} ms`,
        );
      if (result.exitCode !== 0) {
        const how =
          result.exitCode === null
            ? `was killed by ${result.signal}`
            : `exited with code ${result.exitCode}`;
        throw new Error(`code grader ${how}: ${result.stderr.trim().slice(-500)}`);
      }
      const line = result.stdout
        .split("\n")
        .reverse()
        .find((l) => l.startsWith(MARK));
      const value = line === undefined ? undefined : (JSON.parse(line.slice(MARK.length)) as Json);
      if (typeof value === "boolean") return { value: value ? 1 : 0, metadata };
      if (typeof value === "number" && value >= 0 && value <= 1) return { value, metadata };
      throw new Error(
        `code grader: grade() must return a number in [0, 1] or a boolean, got ${JSON.stringify(value ?? null)}`,
      );
    },
  })[USES_SANDBOX](async () => sandbox);
  return scorer.score(args);
}

interface Language {
  command: string[];
  program: (source: string, dataLiteral: string) => string;
}

// The data arrives as a JSON string literal, which both languages read as a string literal.
const LANGUAGES: Record<string, Language> = {
  python: {
    command: ["python3", "-"],
    program: (source, data) =>
      `${source}\n\nimport json as _stet_json\n_stet_args = _stet_json.loads(${data})\n` +
      `_stet_result = grade(_stet_args["input"], _stet_args["output"], _stet_args["expected"], _stet_args["context"])\n` +
      `print("\\n" + ${JSON.stringify(MARK)} + _stet_json.dumps(_stet_result))\n`,
  },
  javascript: {
    command: ["node", "-"],
    program: (source, data) =>
      `${source}\n;(async () => {\n  const a = JSON.parse(${data});\n` +
      `  const r = await grade(a.input, a.output, a.expected, a.context);\n` +
      `  process.stdout.write("\\n" + ${JSON.stringify(MARK)} + JSON.stringify(r) + "\\n");\n})();\n`,
  },
};
