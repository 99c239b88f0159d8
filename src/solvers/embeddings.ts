import * as z from "zod";
import { Failure, postToEndpoint, safeJson, type ChatEndpoint } from "./chat-completion.js";
import { bareModel } from "./model-name.js";

export interface EmbeddingsRequest extends ChatEndpoint {
  /** An embedding model id, e.g. "text-embedding-3-small" (a `provider:` prefix is dropped). */
  model: string;
  input: string[];
  signal?: AbortSignal;
  /** Told of each request re-sent after a retryable failure (pass `ctx.onRetry`). */
  onRetry?: (() => void) | undefined;
}

export interface Embeddings {
  /** One vector per input, in input order. */
  vectors: number[][];
  model: string;
  usage?: { inputTokens: number };
}

const responseSchema = z.object({
  data: z.array(z.object({ index: z.number().int(), embedding: z.array(z.number()) }).loose()),
  usage: z.object({ prompt_tokens: z.number().nonnegative() }).loose().nullish(),
});

/**
 * Embeds `input` through an OpenAI-compatible `/embeddings` endpoint, with chatCompletion's
 * endpoint defaults, retries and abort handling.
 *
 * @example const { vectors } = await embeddings({ model: "text-embedding-3-small", input: ["a", "b"] });
 */
export async function embeddings(request: EmbeddingsRequest): Promise<Embeddings> {
  const model = bareModel(request.model);
  const { value } = await postToEndpoint(
    request,
    "/embeddings",
    { model, input: request.input },
    `embedding model ${model}`,
    (text) => parseEmbeddings(text, request.input.length),
  );
  return { ...value, model };
}

function parseEmbeddings(text: string, count: number): Omit<Embeddings, "model"> | Failure {
  const json = safeJson(text);
  if (json === undefined) {
    return new Failure("provider", "malformed embeddings response: not JSON", 200);
  }
  const parsed = responseSchema.safeParse(json);
  if (!parsed.success || parsed.data.data.length !== count) {
    return new Failure("provider", `malformed embeddings response: expected ${count} vectors`, 200);
  }
  const vectors = [...parsed.data.data].sort((a, b) => a.index - b.index).map((d) => d.embedding);
  const usage = parsed.data.usage;
  return { vectors, ...(usage == null ? {} : { usage: { inputTokens: usage.prompt_tokens } }) };
}
