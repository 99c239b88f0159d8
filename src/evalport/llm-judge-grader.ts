import type { ScorerArgs, ScoreValue } from "../core/eval.js";
import type { Json } from "../core/json.js";
import { modelGraded } from "../scorers/model-graded.js";
import { ScorerError } from "../scorers/scorer-error.js";
import type { ChatEndpoint } from "../solvers/chat-completion.js";
import type { jsonSchemaGrader } from "./json-schema-grader.js";
import { testCaseDetails } from "./test-case-sample.js";

export interface LlmJudgeParams {
  model: string;
  prompt: string;
  temperature?: number;
  /** The JSON Schema the judge's reply must satisfy (the spec's `{score, reason}` shape). */
  schema?: Record<string, Json>;
}

/**
 * The `llm_judge` (and `model graded`) grader through `scorers.modelGraded` and the chat
 * solver's `chatCompletion`. The suite's prompt is the judge template: `{input}`, `{output}`
 * and `{expected}` are filled by modelGraded, `{context}` here from the test case's context.
 * The judge answers with a `GRADE:` line or JSON with a numeric `score` (the spec's
 * `{score, reason}` schema). The judge is `params.model` on the suite's provider endpoint; the
 * run's `--model` never replaces it. With `params.schema` the reply must be JSON (a ```json
 * fence is accepted) that validates against it; a reply that does not is a judge failure (a
 * `ScorerError` carrying what the reply cost). A failing judge call throws: the grader's score
 * is recorded as a scorer error and resume retries it.
 *
 * @example await llmJudgeScore("gr_judge", { model: "gpt-4o", prompt: "Is {output} right? Expected {expected}." }, {}, args)
 */
export async function llmJudgeScore(
  name: string,
  params: LlmJudgeParams,
  endpoint: ChatEndpoint,
  args: ScorerArgs,
  validate?: ReturnType<typeof jsonSchemaGrader>,
): Promise<ScoreValue> {
  const context = (testCaseDetails(args.sample).context ?? []).join("\n\n");
  const judge = modelGraded({
    ...endpoint,
    name,
    model: params.model,
    template: params.prompt.replaceAll("{context}", context),
    ...(params.temperature === undefined ? {} : { temperature: params.temperature }),
  });
  const verdict = await judge.score(args);
  if (params.schema && validate) {
    const details = typeof verdict === "object" ? verdict : undefined;
    const checked = validate(details?.explanation ?? "", { schema: params.schema });
    if (checked.value !== 1) {
      // The judge answered: what its reply cost is spent whatever the verdict.
      throw new ScorerError(
        `llm_judge "${name}": the judge's reply does not match params.schema: ${checked.explanation ?? "invalid"}`,
        { usage: details?.usage },
      );
    }
  }
  return verdict;
}
