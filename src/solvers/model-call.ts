import type { ModelCaller, ModelReply } from "../core/eval.js";
import { chatCompletion } from "./chat-completion.js";
import { bareModel } from "./model-name.js";
import { costUsd } from "./prices.js";
import { SolverError } from "./solver-error.js";

/**
 * `ctx.chat` for solvers and scorers: one chat completion (see chatCompletion) with the
 * attempt's signal, its usage priced as `solvers.chat` prices it, each re-sent request told to
 * `context.onRetry`. The run's `--model` wins over the call's model.
 *
 * @example const reply = await callModel({ model: "gpt-4o-mini", messages }, { signal });
 */
export const callModel: ModelCaller = async (call, context) => {
  const requested = context.model ?? call.model;
  if (requested === undefined) {
    throw new SolverError("solver", "ctx.chat needs a model: pass `model`, or run with --model");
  }
  const model = bareModel(requested);
  const { system, prices, messages, ...endpoint } = call;
  const reply = await chatCompletion({
    ...endpoint,
    model,
    messages: system === undefined ? messages : [{ role: "system", content: system }, ...messages],
    signal: context.signal,
    onRetry: context.onRetry,
  });
  const result: ModelReply = { content: reply.content, model: reply.model };
  if (reply.usage) {
    const cost = costUsd(model, reply.usage, prices);
    result.usage = cost === undefined ? { ...reply.usage } : { ...reply.usage, costUsd: cost };
  }
  return result;
};
