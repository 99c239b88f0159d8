import type { ModelReply, SolverContext, SolverFn, SolverResult } from "../core/eval.js";
import { isLanguageModel } from "../core/language-model.js";
import type { LanguageModelLike } from "../core/language-model.js";
import { modelCallIdentity } from "../core/model-call-identity.js";
import { addUsage } from "../core/usage.js";
import type { Json } from "../core/json.js";
import type { ReplyTokens } from "../core/model-types.js";
import type { Sample, Usage } from "../core/types.js";
import {
  callTarget,
  chatCompletion,
  endpointSecrets,
  redactUrl,
  resolveEndpoint,
} from "./chat-completion.js";
import type { ChatEndpoint, ChatMessage } from "./chat-completion.js";
import { aiSdkTarget } from "./model-call.js";
import { prepareClient } from "./http-post.js";
import { bareModel, providerOf } from "./model-name.js";
import type { BatchChannel } from "../core/batch.js";
import { batchedCall, batchPrice } from "./batch-call.js";
import { costUsd } from "./prices.js";
import type { Price, PriceTiers } from "./prices.js";
import { conversationOf, inputProblem } from "./conversation-input.js";

export interface ChatSolverOptions extends ChatEndpoint {
  /**
   * E.g. "gpt-4o-mini" or "openai:gpt-4o-mini", or an AI SDK language model
   * (`openai.chat("gpt-4o-mini")`, from the provider package the eval installed); the run's
   * `--model` overrides it.
   */
  model: string | LanguageModelLike;
  /** Prepended as a system message unless the sample's messages already have one. */
  system?: string;
  temperature?: number;
  maxTokens?: number;
  /** USD per 1M tokens; overrides the built-in price table. */
  prices?: Price;
  /** Extra request-body fields (seed, top_p, response_format, …). */
  params?: Record<string, Json>;
}

/**
 * A solver that sends each sample to an OpenAI-compatible chat-completions endpoint (OpenAI,
 * vLLM, Ollama, llama.cpp, OpenRouter). The sample's `input` is the user message, an array of
 * `{ role, content }` messages, or `{ turns: [...] }`: user messages answered one after the other
 * (one request per turn, each with the conversation so far; the output is the last reply).
 * Records token usage and, when the price is known, cost.
 *
 * @example
 * solvers.chat({ model: "openai:gpt-4o-mini", system: "Answer with a number.", temperature: 0 });
 */
export function chat(options: ChatSolverOptions): SolverFn {
  const given = options.model;
  const provider = isLanguageModel(given) ? undefined : providerOf(given, options.provider);
  if (provider) prepareClient(resolveEndpoint(options, provider).baseURL);
  const solver: SolverFn = async (sample: Sample, ctx: SolverContext): Promise<SolverResult> => {
    const { messages, turns } = conversationOf(sample, options.system, { turns: true });
    const ask = chatTurn(options, ctx);
    let usage: Usage | null = null;
    // One request per user turn, each with the conversation so far. Only the last reply is the
    // output alone: the others are sent on with the next turn, so their entries are waited for.
    const answer = async (last: boolean): Promise<ModelReply> => {
      const { reply, used } = await ask([...messages], last);
      messages.push(reply.message ?? { role: "assistant", content: reply.content });
      // `used` is the call's own object: the first is kept as it is, not copied.
      if (used !== undefined) usage = usage === null ? used : addUsage(usage, used);
      return reply;
    };
    let reply = await answer(turns.length === 0);
    for (const [index, turn] of turns.entries()) {
      messages.push({ role: "user", content: turn });
      reply = await answer(index === turns.length - 1);
    }
    return { output: reply.content, transcript: messages, ...(usage === null ? {} : { usage }) };
  };
  solver.describe = () =>
    isLanguageModel(given) ? describeModel(given, options) : describeChat(given, options);
  solver.checkInput = (input) => inputProblem(input, { turns: true });
  // Each turn is one model call: under --batch they go through the provider's batches, turn by turn.
  solver.batchable = provider !== undefined;
  // An AI SDK model's credentials live in its provider package: stet never sees them. The
  // default provider's key is still declared, for a run whose --model (an id) replaces it.
  solver.secrets = () => endpointSecrets(options, provider ?? providerOf("", options.provider));
  return solver;
}

/**
 * One model call of `solvers.chat` on `messages`: journaled as ctx.chat is (a resumed sample gets
 * the reply it already paid for, whose usage stays the attempt's, marked reused or carried: no
 * spend now).
 * `last`: the reply is only the output, so its entry commits ahead of the attempt without the
 * caller waiting for it.
 */
function chatTurn(
  options: ChatSolverOptions,
  ctx: SolverContext,
): (messages: ChatMessage[], last: boolean) => Promise<{ reply: ModelReply; used?: Usage }> {
  const requested = ctx.model ?? options.model;
  const model = isLanguageModel(requested) ? requested.modelId : bareModel(requested);
  const providerName = isLanguageModel(requested)
    ? requested.provider
    : providerOf(requested, options.provider).name;
  return async (messages, last) => {
    const send = async (): Promise<ModelReply> => {
      if (ctx.batch && !isLanguageModel(requested)) {
        return batchedTurn(ctx.batch, requested, model, messages, options, ctx.signal);
      }
      const {
        requests: _requests,
        usage,
        ...reply
      } = await chatCompletion({
        ...options,
        model: requested,
        messages,
        signal: ctx.signal,
        // Each re-sent request counts toward the attempt's retries, also when the call fails.
        onRetry: ctx.onRetry,
        rateGate: ctx.rateGate,
      });
      const sent: ModelReply = reply;
      if (usage !== undefined) sent.usage = withCost(model, usage, options.prices);
      return sent;
    };
    const input = chatInput(model, providerName, messages, options);
    if (!ctx.chatStep) {
      const reply = await send();
      return reply.usage === undefined ? { reply } : { reply, used: reply.usage };
    }
    // The reply cache keys the call by its endpoint and credential too (an AI SDK model's, as its
    // provider package says).
    const target = isLanguageModel(requested)
      ? aiSdkTarget(requested)
      : callTarget(options, providerOf(requested, options.provider));
    // The call's usage as the attempt counts it: a replayed call's marked reused or carried.
    const { reply, usage } = await ctx.chatStep(input, send, { last, target });
    return usage === undefined ? { reply } : { reply, used: usage };
  };
}

/**
 * The journal's record of the request, as ctx.chat's: the call's identity without its endpoint
 * (see modelCallIdentity), the system prompt already among the messages; never key or headers.
 */
function chatInput(
  model: string,
  provider: string,
  messages: ChatMessage[],
  options: ChatSolverOptions,
): Json {
  return modelCallIdentity({
    model,
    messages,
    temperature: options.temperature,
    maxTokens: options.maxTokens,
    params: options.params,
    provider,
  });
}

/** One turn through the run's provider batches (`--batch`), priced at the batch tier. */
async function batchedTurn(
  channel: BatchChannel,
  requested: string,
  model: string,
  messages: ChatMessage[],
  options: ChatSolverOptions,
  signal: AbortSignal,
): Promise<ModelReply> {
  const provider = providerOf(requested, options.provider);
  const { temperature, maxTokens, params } = options;
  const call = { model, messages, temperature, maxTokens, params };
  const { usage, ...reply } = await batchedCall(channel, provider, options, call, signal);
  const sent: ModelReply = { ...reply, model };
  if (usage !== undefined) sent.usage = withCost(model, usage, batchPrice(model, options.prices));
  return sent;
}

function withCost(model: string, tokens: ReplyTokens, price: PriceTiers | undefined): Usage {
  const cost = costUsd(model, tokens, price);
  return cost === undefined ? { ...tokens } : { ...tokens, costUsd: cost };
}

/**
 * An AI SDK model's description: its provider string and model id, nothing of the object (its
 * settings may hold credentials), and the solver's own settings.
 */
export function describeModel(
  model: LanguageModelLike,
  options: ChatSolverOptions,
): Record<string, Json> {
  return definedOnly({
    kind: "chat",
    model: model.modelId,
    provider: model.provider,
    system: options.system,
    temperature: options.temperature,
    maxTokens: options.maxTokens,
    maxRetries: options.maxRetries,
    prices: options.prices === undefined ? undefined : { ...options.prices },
    params: options.params,
  });
}

/** A model id's description: the model, its endpoint (never a key) and the solver's settings. */
export function describeChat(model: string, options: ChatSolverOptions): Record<string, Json> {
  const provider = providerOf(model, options.provider);
  const { baseURL, apiKeyEnv } = resolveEndpoint(options, provider);
  return definedOnly({
    kind: "chat",
    model: bareModel(model),
    // Absent for openai, as in every run recorded before stet had providers.
    provider: provider.name === "openai" ? undefined : provider.name,
    baseURL: redactUrl(baseURL),
    apiKeyEnv,
    system: options.system,
    temperature: options.temperature,
    maxTokens: options.maxTokens,
    timeoutMs: options.timeoutMs,
    maxRetries: options.maxRetries,
    prices: options.prices === undefined ? undefined : { ...options.prices },
    params: options.params,
    // Header values may carry credentials; only their names are recorded.
    headers: options.headers === undefined ? undefined : Object.keys(options.headers),
  });
}

/** The description without its undefined members. */
export function definedOnly(description: Record<string, Json | undefined>): Record<string, Json> {
  return Object.fromEntries(
    Object.entries(description).filter((entry): entry is [string, Json] => entry[1] !== undefined),
  );
}
