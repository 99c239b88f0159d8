import type { CallTarget, ModelCaller, ModelReply } from "../core/eval.js";
import { isLanguageModel, type LanguageModelLike } from "../core/language-model.js";
import { callTarget, chatCompletion } from "./chat-completion.js";
import { providerOf } from "./model-name.js";
import { costUsd } from "./prices.js";
import { SolverError } from "./solver-error.js";

/**
 * `ctx.chat` for solvers and scorers: one chat call (see chatCompletion: the model id's prefix
 * or `provider` picks the wire format) with the attempt's signal, its usage priced as
 * `solvers.chat` prices it, each re-sent request told to `context.onRetry`. The run's `--model`
 * wins over the call's model. The whole reply comes back: text, tool calls, finish reason,
 * reasoning and the assistant message.
 *
 * @example const reply = await callModel({ model: "gpt-4o-mini", messages }, { signal });
 */
export const callModel: ModelCaller = async (call, context) => {
  const model = context.model ?? call.model;
  if (model === undefined) {
    throw new SolverError("solver", "ctx.chat needs a model: pass `model`, or run with --model");
  }
  const { system, prices, messages, journal: _journal, ...endpoint } = call;
  const {
    requests: _requests,
    usage,
    ...reply
  } = await chatCompletion({
    ...endpoint,
    model,
    messages: system === undefined ? messages : [{ role: "system", content: system }, ...messages],
    signal: context.signal,
    onRetry: context.onRetry,
    rateGate: context.rateGate,
  });
  const result: ModelReply = reply;
  if (usage) {
    const cost = costUsd(reply.model, usage, prices);
    result.usage = cost === undefined ? { ...usage } : { ...usage, costUsd: cost };
  }
  return result;
};
/**
 * Where an AI SDK model's calls go, for the reply cache (`languageModelTarget`), its module loaded
 * on the first such call: an eval that uses no AI SDK model loads none of it (start-up).
 *
 * @example await aiSdkTarget(openai.chat("gpt-4o-mini")) // { provider: "openai.chat", baseURL, credential }
 */
export async function aiSdkTarget(model: LanguageModelLike): Promise<CallTarget | undefined> {
  try {
    return await (await import("./ai-sdk-endpoint.js")).languageModelTarget(model);
  } catch {
    return undefined; // unreadable: the call is not cached (never a rejection nobody awaits)
  }
}

// Where a ctx.chat call goes, for the reply cache: an AI SDK model's, as its package says.
callModel.target = (call, model) => {
  const requested = model ?? call.model;
  if (requested === undefined) return undefined;
  if (isLanguageModel(requested)) return aiSdkTarget(requested);
  return callTarget(call, providerOf(requested, call.provider));
};
// What ctx.languageModel's wrapped models call: doGenerate/doStream with stet's retries, priced;
// loaded on the first such call, so an eval that wraps no model loads none of it (start-up).
const aiSdk = () => import("./ai-sdk-model.js");
callModel.languageModel = {
  generate: async (...call) => (await aiSdk()).generateLanguageModel.generate(...call),
  stream: async (...call) => (await aiSdk()).generateLanguageModel.stream(...call),
  target: aiSdkTarget,
};

/**
 * A call's worst case for the per-sample limits: its prompt's tokens estimated at one per 3
 * characters of its messages, system prompt and tools (JSON), `maxTokens` output tokens, and
 * their cost at the model's (or the call's) price; 0 where a figure is unknown.
 *
 * @example callModel.worstCase!({ model: "gpt-4o-mini", messages, maxTokens: 100 }, undefined).costUsd
 */
callModel.worstCase = (call, runModel) => {
  const model = runModel ?? (typeof call.model === "string" ? call.model : "");
  const text = JSON.stringify([call.system ?? "", call.messages, call.tools ?? null]) ?? "";
  const inputTokens = Math.ceil(text.length / 3);
  const outputTokens = call.maxTokens ?? 0;
  const cost = costUsd(model, { inputTokens, outputTokens }, call.prices);
  return { inputTokens, outputTokens, costUsd: cost ?? 0 };
};
