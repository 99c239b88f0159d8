import type { ScorerArgs, ScoreValue } from "../core/eval.js";
import type { ChatEndpoint } from "../solvers/chat-completion.js";
import { outputText } from "../scorers/targets.js";
import { embeddings } from "../solvers/embeddings.js";

/**
 * The `semantic_similarity` grader (SPEC: "cosine similarity between embeddings of
 * actual_output and expected_output; score is the similarity"): both texts embedded in one
 * request to `params.model` on the suite's provider endpoint. A negative similarity scores 0,
 * since scores live in [0, 1]; the raw value is in the metadata. A test case without an expected
 * output cannot be graded (null, `grader_error`); a failing embeddings call throws, so the
 * attempt is a scorer error that resume retries.
 *
 * @example await semanticSimilarityScore({ model: "text-embedding-3-small" }, {}, args) // { value: 0.91, ... }
 */
export async function semanticSimilarityScore(
  params: { model: string },
  endpoint: ChatEndpoint,
  args: ScorerArgs,
): Promise<ScoreValue> {
  const expected = args.sample.target;
  if (expected === undefined || expected === null) {
    return {
      value: null,
      skipped: "grader_error",
      explanation: "semantic_similarity needs the test case's expected output",
    };
  }
  const { vectors, model, usage } = await embeddings({
    ...endpoint,
    model: params.model,
    input: [outputText(args.output), outputText(expected)],
    signal: args.ctx.signal,
    onRetry: args.ctx.onRetry,
  });
  const similarity = cosine(vectors[0]!, vectors[1]!);
  return {
    value: Math.min(1, Math.max(0, similarity)),
    explanation: `cosine similarity ${similarity.toFixed(4)} (${model})`,
    metadata: {
      similarity,
      embeddingModel: model,
      ...(usage ? { embeddingTokens: usage.inputTokens } : {}),
    },
    // The tokens count toward the attempt's usage; embeddings have no price table entry.
    ...(usage ? { usage: { inputTokens: usage.inputTokens, outputTokens: 0 } } : {}),
  };
}

/** Cosine similarity; 0 for a zero vector or vectors of different lengths. */
export function cosine(a: readonly number[], b: readonly number[]): number {
  if (a.length !== b.length || a.length === 0) return 0;
  let dot = 0;
  let na = 0;
  let nb = 0;
  for (let i = 0; i < a.length; i++) {
    dot += a[i]! * b[i]!;
    na += a[i]! * a[i]!;
    nb += b[i]! * b[i]!;
  }
  return na === 0 || nb === 0 ? 0 : dot / Math.sqrt(na * nb);
}
