import * as z from "zod";
import type { ModelReply, SolverContext, SolverFn, SolverResult } from "../core/eval.js";
import { jsonSchema } from "../core/json.js";
import { isLanguageModel } from "../core/language-model.js";
import type { LanguageModelLike } from "../core/language-model.js";
import { modelCallIdentity } from "../core/model-call-identity.js";
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
import { prepareClient } from "./http-post.js";
import { bareModel, providerOf } from "./model-name.js";
import { costUsd } from "./prices.js";
import type { Price } from "./prices.js";
import { SolverError } from "./solver-error.js";

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

const messagesSchema = z.array(z.object({ role: z.string().min(1), content: jsonSchema }).loose());

/**
 * A solver that sends each sample to an OpenAI-compatible chat-completions endpoint (OpenAI,
 * vLLM, Ollama, llama.cpp, OpenRouter). The sample's `input` is the user message, or an array
 * of `{ role, content }` messages. Records token usage and, when the price is known, cost.
 *
 * @example
 * solvers.chat({ model: "openai:gpt-4o-mini", system: "Answer with a number.", temperature: 0 });
 */
export function chat(options: ChatSolverOptions): SolverFn {
  const given = options.model;
  const provider = isLanguageModel(given) ? undefined : providerOf(given, options.provider);
  if (provider) prepareClient(resolveEndpoint(options, provider).baseURL);
  const solver: SolverFn = async (sample: Sample, ctx: SolverContext): Promise<SolverResult> => {
    const requested = ctx.model ?? options.model;
    const model = isLanguageModel(requested) ? requested.modelId : bareModel(requested);
    const messages = toMessages(sample, options.system);
    const send = async (): Promise<ModelReply> => {
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
      });
      const sent: ModelReply = reply;
      if (usage !== undefined) sent.usage = withCost(model, usage, options.prices);
      return sent;
    };
    // Journaled as ctx.chat is: a resumed sample gets the reply it already paid for, whose usage
    // stays the attempt's, marked reused (no spend now). The reply is only the
    // output: its entry commits ahead of the attempt without this waiting for it (`last`).
    const providerName = isLanguageModel(requested)
      ? requested.provider
      : providerOf(requested, options.provider).name;
    const input = chatInput(model, providerName, messages, options);
    let reply: ModelReply;
    let usage: Usage | undefined;
    // The reply cache keys the call by its endpoint and credential too (none for an AI SDK model).
    const target = isLanguageModel(requested)
      ? undefined
      : callTarget(options, providerOf(requested, options.provider));
    if (ctx.chatStep) ({ reply, usage } = await ctx.chatStep(input, send, { last: true, target }));
    else usage = (reply = await send()).usage;
    const transcript: Json = [
      ...messages,
      reply.message ?? { role: "assistant", content: reply.content },
    ];
    return {
      output: reply.content,
      transcript,
      ...(usage === undefined ? {} : { usage }),
    };
  };
  solver.describe = () =>
    isLanguageModel(given) ? describeModel(given, options) : describeChat(given, options);
  // An AI SDK model's credentials live in its provider package: stet never sees them. The
  // default provider's key is still declared, for a run whose --model (an id) replaces it.
  solver.secrets = () => endpointSecrets(options, provider ?? providerOf("", options.provider));
  return solver;
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

/** A sample's input as chat messages, `system` prepended unless they already have one. */
export function toMessages(sample: Sample, system: string | undefined): ChatMessage[] {
  const { input } = sample;
  let messages: ChatMessage[];
  if (typeof input === "string") {
    messages = [{ role: "user", content: input }];
  } else {
    const parsed = messagesSchema.safeParse(input);
    if (!parsed.success) {
      throw new SolverError(
        "solver",
        `sample "${sample.id}": the chat solver needs an input that is a string or an array of { role, content } messages`,
      );
    }
    messages = parsed.data as ChatMessage[];
  }
  if (system === undefined || messages.some((m) => m.role === "system")) return messages;
  return [{ role: "system", content: system }, ...messages];
}

function withCost(model: string, tokens: ReplyTokens, price: Price | undefined): Usage {
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
