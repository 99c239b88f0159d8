import type { ScorerArgs, ScoreValue } from "../core/eval.js";
import { modelGraded } from "../scorers/model-graded.js";
import type { ChatEndpoint } from "../solvers/chat-completion.js";
import { testCaseDetails } from "./test-case-sample.js";

export interface LlmJudgeParams {
  model: string;
  prompt: string;
  temperature?: number;
}

/**
 * The `llm_judge` (and `model graded`) grader through `scorers.modelGraded` and the chat
 * solver's `chatCompletion`. The suite's prompt is the judge template: `{input}`, `{output}`
 * and `{expected}` are filled by modelGraded, `{context}` here from the test case's context.
 * The judge answers with a `GRADE:` line or JSON with a numeric `score` (the spec's
 * `{score, reason}` schema). The judge is `params.model` on the suite's provider endpoint; the
 * run's `--model` never replaces it. A failing judge call throws: the attempt is recorded as
 * a scorer error and resume retries it.
 *
 * @example await llmJudgeScore("gr_judge", { model: "gpt-4o", prompt: "Is {output} right? Expected {expected}." }, {}, args)
 */
export async function llmJudgeScore(
  name: string,
  params: LlmJudgeParams,
  endpoint: ChatEndpoint,
  args: ScorerArgs,
): Promise<ScoreValue> {
  const context = (testCaseDetails(args.sample).context ?? []).join("\n\n");
  const judge = modelGraded({
    ...endpoint,
    name,
    model: params.model,
    template: params.prompt.replaceAll("{context}", context),
    ...(params.temperature === undefined ? {} : { temperature: params.temperature }),
  });
  return judge.score(args);
}
