import type { BatchChannel, BatchClient } from "../core/batch.js";
import type { PriceTiers, Price } from "../core/types.js";
import { anthropicBatchClient } from "./anthropic-batch.js";
import { anthropic } from "./anthropic-provider.js";
import { openai } from "./openai-provider.js";
import type { ChatEndpoint } from "./chat-completion.js";
import { resolveEndpoint } from "./chat-completion.js";
import { openaiBatchClient } from "./openai-batch.js";
import { priceFor } from "./prices.js";
import type { CanonicalCall, CanonicalReply, Provider } from "./provider.js";
import { Failure } from "./retrying-post.js";
import { SolverError } from "./solver-error.js";

/**
 * The batch client of a provider at an endpoint: the provider's batch protocol (OpenAI's files
 * and batches, or Anthropic's Message Batches) with the call's base URL, key and headers.
 * Calls with the same endpoint and credential share a `group` (they go in one batch).
 *
 * @example batchClientOf({ baseURL: mock.url }, openai).provider // "openai"
 */
export function batchClientOf(options: ChatEndpoint, provider: Provider): BatchClient {
  const { baseURL, apiKey } = resolveEndpoint(options, provider);
  const headers = provider.headers(apiKey);
  for (const [name, value] of Object.entries(options.headers ?? {})) {
    headers[name.toLowerCase()] = value;
  }
  const endpoint = {
    baseURL,
    headers,
    secret: apiKey,
    errorDetail: (text: string) => provider.errorDetail(text),
  };
  const group = JSON.stringify([
    provider.name,
    baseURL,
    apiKey ?? null,
    Object.entries(headers).sort(),
  ]);
  return provider.name === "anthropic"
    ? anthropicBatchClient(endpoint, group)
    : openaiBatchClient(endpoint, group);
}

/**
 * One model call through the run's batches: the provider's request body handed to `channel`,
 * its result read as the provider's reply. A request that failed inside the batch throws as a
 * failed request does (the key's error, retried as errors are).
 *
 * @example const reply = await batchedCall(ctx.batch, openai, options, call, ctx.signal);
 */
export async function batchedCall(
  channel: BatchChannel,
  provider: Provider,
  options: ChatEndpoint,
  call: CanonicalCall,
  signal: AbortSignal,
): Promise<CanonicalReply> {
  const client = batchClientOf(options, provider);
  const { body } = provider.chatRequest(call);
  const result = await channel.send({ client, body }, signal);
  const what = `model ${call.model} through ${provider.name}'s batch API at ${client.endpoint}`;
  if (result.kind === "errored") {
    throw new SolverError("provider", `${what}: ${result.message}`, {
      ...(result.status === undefined ? {} : { status: result.status }),
    });
  }
  const reply = provider.chatReply(result.body, (text) => {
    const said = provider.errorDetail(text);
    return said === "" ? "" : `: ${said}`;
  });
  if (reply instanceof Failure) throw new SolverError(reply.type, `${what}: ${reply.message}`);
  return reply;
}

/**
 * The batch tier of a model's price: `prices.batch` when given, else half of its standard tiers
 * (OpenAI's and Anthropic's batch APIs cost 50 % of the list price). Undefined when the model
 * has no price.
 *
 * @example batchPrice("gpt-4o-mini", undefined) // { input: 0.075, output: 0.3, cachedInput: 0.0375 }
 */
export function batchPrice(model: string, price: Price | undefined): PriceTiers | undefined {
  const base = price ?? priceFor(model);
  if (base === undefined) return undefined;
  if (base.batch !== undefined) return base.batch;
  const half = (n: number | undefined) => (n === undefined ? undefined : n / 2);
  const tiers: PriceTiers = { input: base.input / 2, output: base.output / 2 };
  const cachedInput = half(base.cachedInput);
  const cacheWrite = half(base.cacheWrite);
  if (cachedInput !== undefined) tiers.cachedInput = cachedInput;
  if (cacheWrite !== undefined) tiers.cacheWrite = cacheWrite;
  return tiers;
}

/**
 * The batch client of a recorded submission, for a process that has no eval loaded (`stet
 * cancel` on a run nobody executes): the recorded provider and endpoint, with the provider's key
 * from the environment (`OPENAI_API_KEY`, `ANTHROPIC_API_KEY`). The endpoint was recorded without
 * credentials, so a key given only in the eval's `apiKey` or `headers` is not there.
 *
 * @example submissionClient({ provider: "openai", endpoint: "http://127.0.0.1:8080/v1" }).provider // "openai"
 */
export function submissionClient(submission: { provider: string; endpoint: string }): BatchClient {
  const provider = submission.provider === "anthropic" ? anthropic : openai;
  return batchClientOf({ baseURL: submission.endpoint }, provider as Provider);
}
