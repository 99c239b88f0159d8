import { HUMAN_REVIEW_PENDING } from "./review-grades.js";
import * as z from "zod";
import type { ScorerArgs, ScoreValue } from "../core/eval.js";
import type { Json } from "../core/json.js";
import { exact } from "../scorers/exact.js";
import { includes } from "../scorers/includes.js";
import { jsonMatch } from "../scorers/json-match.js";
import { numeric } from "../scorers/numeric.js";
import { regex } from "../scorers/regex.js";
import type { ChatEndpoint } from "../solvers/chat-completion.js";
import type { Sandbox } from "../sandbox/index.js";
import { codeGraderScore } from "./code-grader.js";
import { GRADER_PASSED_KEY, GRADER_TYPE_KEY } from "./grader-mapping.js";
import { jsonPathScore } from "./json-path-grader.js";
import { jsonSchemaGrader } from "./json-schema-grader.js";
import { llmJudgeScore } from "./llm-judge-grader.js";
import { semanticSimilarityScore } from "./semantic-similarity-grader.js";
import type { SuiteGrader } from "./suite-schema.js";
import { isObject } from "./validation-types.js";

/** A scorer for a `custom` (or framework-specific) grader, found by its `params.handler`. */
export type GraderHandler = (
  args: ScorerArgs & { grader: SuiteGrader },
) => Promise<ScoreValue> | ScoreValue;

export interface GraderEnv {
  /** Where `llm_judge` graders call their judge: the suite's provider endpoint. */
  endpoint: ChatEndpoint;
  /** Extra handlers by name, beside the built-in ones (`numeric`, `json_match`). */
  handlers?: Readonly<Record<string, GraderHandler>>;
  /** Where `code` graders run: the eval's sandbox, which `resolveEval` hands in, checked. */
  sandbox?: Sandbox;
}

export const UNSUPPORTED = "unsupported_grader_type";

const BUILT_IN_HANDLERS: Record<string, GraderHandler> = {
  numeric: ({ grader, ...args }) => {
    const { tolerance, relative } = z
      .object({ tolerance: z.number().nonnegative().optional(), relative: z.boolean().optional() })
      .parse(grader.params ?? {});
    return numeric({
      ...(tolerance === undefined ? {} : { tolerance }),
      ...(relative === undefined ? {} : { relative }),
    }).score(args);
  },
  json_match: ({ grader, ...args }) =>
    jsonMatch({ subset: grader.params?.subset === true }).score(args),
};
BUILT_IN_HANDLERS["stet.numeric"] = BUILT_IN_HANDLERS.numeric!;
BUILT_IN_HANDLERS["stet.json_match"] = BUILT_IN_HANDLERS.json_match!;

/**
 * Makes the function that scores an output with an EvalPort grader (see the mapping table in
 * `gradeWith`). Every score carries the grader's type and whether it passed (`value >=
 * params.threshold`, default 1) in its metadata. A grader that cannot score deterministically
 * (no expected output, an output that breaks it) gives `{ value: null, skipped: "grader_error" }`
 * (the spec's GRADER_ERROR); only an `llm_judge` failure throws, so resume can retry the call.
 *
 * @example
 * const grade = createGraderRunner({ endpoint: { baseURL: "http://localhost:8000/v1" } });
 * await grade({ id: "g", type: "contains", params: { substring: "Paris" } }, args) // { value: 1, ... }
 */
export function createGraderRunner(env: GraderEnv) {
  const handlers = { ...BUILT_IN_HANDLERS, ...env.handlers };
  const jsonSchema = jsonSchemaGrader();
  return async (grader: SuiteGrader, args: ScorerArgs): Promise<ScoreValue> => {
    const p = grader.params ?? {};
    let value: ScoreValue;
    try {
      value = await gradeWith(grader, args, { env, handlers, jsonSchema });
    } catch (error) {
      // A failed model call must stay retryable: the attempt becomes a scorer error.
      if (MODEL_GRADERS.has(grader.type)) throw error;
      const explanation = error instanceof Error ? error.message : String(error);
      value = { value: null, skipped: "grader_error", explanation };
    }
    return annotate(value, grader.type, typeof p.threshold === "number" ? p.threshold : 1);
  };
}

/** semantic_similarity's `model` is optional in the SPEC; OpenAI's small embedding model then. */
const DEFAULT_EMBEDDING_MODEL = "text-embedding-3-small";

const MODEL_GRADERS = new Set(["llm_judge", "model graded", "semantic_similarity"]);

interface Tools {
  env: GraderEnv;
  handlers: Record<string, GraderHandler>;
  jsonSchema: ReturnType<typeof jsonSchemaGrader>;
}

/**
 * | EvalPort type            | stet                                                        |
 * |--------------------------|-------------------------------------------------------------|
 * | exact_match              | scorers.exact (ignore_case, trim_whitespace)                |
 * | contains                 | scorers.includes with params.substring (ignore_case)        |
 * | regex                    | scorers.regex (RE2 inline flags `(?i)` → JS flags)          |
 * | json_schema              | ajv against params.schema (strict: whole output is JSON)    |
 * | json_path                | single-value JSONPath + operator                            |
 * | llm_judge, model graded  | scorers.modelGraded through chatCompletion; reply checked   |
 * |                          | against params.schema when given                            |
 * | numeric, custom handler  | registered handlers: numeric, json_match (+ stet.*), yours  |
 * | human                    | null, skipped "human_review_pending"                        |
 * | semantic_similarity      | cosine similarity of embeddings (params.model, else         |
 * |                          | text-embedding-3-small, on the suite's provider endpoint)   |
 * | code                     | scorers.code in the eval's sandbox: grade(input, output,    |
 * |                          | expected, context) in python or javascript, timeout_ms      |
 * | unknown                  | null, skipped "unsupported_grader_type"                     |
 */
async function gradeWith(grader: SuiteGrader, args: ScorerArgs, tools: Tools): Promise<ScoreValue> {
  const p = grader.params ?? {};
  const str = (key: string) => (typeof p[key] === "string" ? p[key] : undefined);
  switch (grader.type) {
    case "exact_match":
      return exact({
        caseSensitive: p.ignore_case !== true,
        trim: p.trim_whitespace !== false,
      }).score(args);
    case "contains":
      return includes({
        substring: str("substring") ?? "",
        caseSensitive: p.ignore_case !== true,
      }).score(args);
    case "regex": {
      const { source, flags } = re2ToJs(str("pattern") ?? "", str("flags") ?? "");
      return regex(source, flags).score(args);
    }
    case "json_schema":
      return tools.jsonSchema(args.output, {
        schema: p.schema as Record<string, Json>,
        strict: p.strict === true,
      });
    case "json_path":
      return jsonPathScore(args.output, {
        path: str("path") ?? "$",
        expected: str("expected") ?? "",
        ...(str("operator") === undefined ? {} : { operator: str("operator")! }),
      });
    case "llm_judge":
    case "model graded":
      return llmJudgeScore(
        grader.id,
        {
          model: str("model") ?? "",
          prompt: str("prompt") ?? "",
          ...(typeof p.temperature === "number" ? { temperature: p.temperature } : {}),
          ...(isObject(p.schema) ? { schema: p.schema } : {}),
        },
        tools.env.endpoint,
        args,
        tools.jsonSchema,
      );
    case "human":
      // Until reviewed: a ResultSet export fills it from the run's reviews (review-grades.ts).
      return { value: null, skipped: HUMAN_REVIEW_PENDING, explanation: str("instructions") };
    case "semantic_similarity":
      return semanticSimilarityScore(
        { model: str("model") ?? DEFAULT_EMBEDDING_MODEL },
        tools.env.endpoint,
        args,
      );
    case "code":
      return codeGraderScore(
        {
          language: str("language") ?? "",
          source: str("source") ?? "",
          ...(typeof p.timeout_ms === "number" ? { timeoutMs: p.timeout_ms } : {}),
        },
        grader.id,
        args,
        tools.env.sandbox,
      );
    default: {
      const handler = tools.handlers[str("handler") ?? ""] ?? tools.handlers[grader.type];
      if (handler) return handler({ ...args, grader });
      return unsupported(`no handler "${str("handler") ?? grader.type}" is registered`);
    }
  }
}

function unsupported(explanation: string): ScoreValue {
  return { value: null, skipped: UNSUPPORTED, explanation };
}

/** RE2 allows leading inline flags `(?i)`, `(?s)`, `(?m)`; JavaScript takes them as flags. */
function re2ToJs(pattern: string, flags: string): { source: string; flags: string } {
  const inline = /^\(\?([imsU]+)\)/.exec(pattern);
  const all = new Set([...flags, ...(inline?.[1] ?? "")]);
  if (all.has("U"))
    throw new Error("regex: the RE2 flag U (ungreedy) has no JavaScript equivalent");
  return { source: inline ? pattern.slice(inline[0].length) : pattern, flags: [...all].join("") };
}

function annotate(value: ScoreValue, type: string, threshold: number): ScoreValue {
  if (typeof value !== "object") {
    const n = typeof value === "boolean" ? Number(value) : value;
    return { value: n, metadata: { [GRADER_TYPE_KEY]: type, [GRADER_PASSED_KEY]: n >= threshold } };
  }
  if (value.value === null) {
    const { explanation, ...rest } = value;
    return {
      ...rest,
      ...(explanation === undefined ? {} : { explanation }),
      metadata: { ...value.metadata, [GRADER_TYPE_KEY]: type, [GRADER_PASSED_KEY]: false },
    };
  }
  const n = Number(value.value);
  return {
    ...value,
    value: n,
    metadata: { ...value.metadata, [GRADER_TYPE_KEY]: type, [GRADER_PASSED_KEY]: n >= threshold },
  };
}
