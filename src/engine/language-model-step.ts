import type { LanguageModelCallContext, LanguageModelGenerator } from "../core/eval.js";
import type { Json } from "../core/json.js";
import {
  isLanguageModel,
  languageModelCallIdentity,
  restoreGenerateResult,
} from "../core/language-model.js";
import type { LanguageModelCallOptions, LanguageModelLike } from "../core/language-model.js";
import type { RateGate } from "../core/rate-limits.js";
import type { Price, Usage } from "../core/types.js";
import { reusedUsage } from "../core/usage.js";
import type { CachedResult } from "./reply-cache.js";
import type { StepJournal } from "./step-journal.js";

/** What a wrapped model needs from its attempt. */
export interface WrapContext {
  /** The eval's (ModelCaller.languageModel); absent: there is no model caller. */
  generator: LanguageModelGenerator | undefined;
  /** The attempt's signal; a call's own `abortSignal` aborts it too. */
  signal: AbortSignal;
  onRetry: () => void;
  /** Collects the usage of every call: made now, or replayed (then marked `reused`). */
  spend: (usage: Usage) => void;
  journal?: StepJournal | undefined;
  prices?: Price | undefined;
  /** Before each call: throws when the attempt reached one of its limits (SampleBudget). */
  beforeCall?: (() => void) | undefined;
  /** The run's rate limits: each call waits for its endpoint's budget. */
  rateGate?: RateGate | undefined;
  /** A call's place in the run's reply cache (absent, or undefined: not cached). */
  cache?: ((name: string, input: Json) => CachedResult | undefined) | undefined;
}

/**
 * An AI SDK model whose every `doGenerate` and `doStream` call is a journal step of kind `chat`
 * (named `ai-sdk.generate` / `ai-sdk.stream`), keyed by the model's provider and id and the
 * call options without signal and headers. A resumed execution gets the recorded result (a
 * stream: its recorded parts as a new ReadableStream) without calling the model; a call made
 * now goes through the generator (stet's retries, usage priced) and its usage is spent. The
 * wrapper has the model's specification version, provider, id and supported URLs.
 *
 * @example const model = wrapLanguageModel(openai.chat("gpt-4o-mini"), { generator, signal, onRetry, spend, journal });
 */
export function wrapLanguageModel<M extends LanguageModelLike>(model: M, context: WrapContext): M {
  if (!isLanguageModel(model)) {
    throw new Error(
      'ctx.languageModel needs an AI SDK language model (an object with specificationVersion, provider, modelId and doGenerate, e.g. openai.chat("gpt-4o-mini"))',
    );
  }
  const { generator } = context;
  if (!generator) {
    throw new Error("ctx.languageModel is not available: this eval has no model caller");
  }
  const wrapped = {
    specificationVersion: model.specificationVersion,
    provider: model.provider,
    modelId: model.modelId,
    get supportedUrls(): unknown {
      return (model as { supportedUrls?: unknown }).supportedUrls ?? {};
    },
    async doGenerate(options: LanguageModelCallOptions): Promise<unknown> {
      const result = await journaled(model, context, "ai-sdk.generate", options, (call) =>
        generator.generate(model, options, call),
      );
      return restoreGenerateResult(result);
    },
    async doStream(options: LanguageModelCallOptions): Promise<unknown> {
      const result = await journaled(model, context, "ai-sdk.stream", options, (call) =>
        generator.stream(model, options, call),
      );
      const parts = (result as { parts?: Json[] }).parts ?? [];
      return { stream: replayStream(parts.map(restoreStreamPart)) };
    },
  };
  return wrapped as unknown as M;
}

async function journaled(
  model: LanguageModelLike,
  context: WrapContext,
  name: string,
  options: LanguageModelCallOptions,
  call: (callContext: LanguageModelCallContext) => Promise<{ result: Json; usage?: Usage }>,
): Promise<Json> {
  context.beforeCall?.();
  const signal =
    options.abortSignal === undefined
      ? context.signal
      : AbortSignal.any([context.signal, options.abortSignal]);
  const { journal } = context;
  const input =
    journal || context.cache ? languageModelCallIdentity(model, options) : (null as Json);
  const cache = context.cache?.(name, input);
  const send = async (): Promise<{ result: Json; usage?: Usage }> => {
    const found = await cache?.get();
    if (found) {
      // Bought by an earlier call: reused, no spend now (journaled as if sent, as ctx.chat's).
      if (found.usage) context.spend(reusedUsage(found.usage));
      return found;
    }
    const { onRetry, prices, rateGate } = context;
    const done = await call({ signal, onRetry, prices, rateGate });
    if (done.usage) context.spend(done.usage);
    await cache?.put(done);
    return done;
  };
  if (!journal) return (await send()).result;
  // A failed call is not journaled (as ctx.chat's): a resume asks again.
  const done = await journal.step("chat", name, input, send, () => null);
  // A replayed call is still the attempt's trajectory: its usage counts, marked reused (the
  // interrupted execution paid for it) or carried (an errored attempt's), so spend now leaves
  // it out (as ctx.chat's).
  if (done.replayedUsage) context.spend(done.replayedUsage);
  return done.result;
}

/** A recorded stream part as the AI SDK reads it: a response-metadata timestamp a Date again. */
function restoreStreamPart(part: Json): unknown {
  if (part === null || typeof part !== "object" || Array.isArray(part)) return part;
  if (part.type === "response-metadata" && typeof part.timestamp === "string") {
    return { ...part, timestamp: new Date(part.timestamp) };
  }
  return part;
}

function replayStream(parts: readonly unknown[]): ReadableStream<unknown> {
  return new ReadableStream({
    start(controller) {
      for (const part of parts) controller.enqueue(part);
      controller.close();
    },
  });
}
