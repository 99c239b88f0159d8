import type { TargetOf, ModelCall, ModelCaller, ModelReply, SolverContext } from "../core/eval.js";
import type { BatchChannel } from "../core/batch.js";
import type { Json } from "../core/json.js";
import type { LanguageModelLike } from "../core/language-model.js";
import { declaredSecret, type Secret } from "../core/secrets.js";
import type { RateGate } from "../core/rate-limits.js";
import type { Key, Usage } from "../core/types.js";
import type { StepError } from "../store/types.js";
import { reusedUsage } from "../core/usage.js";
import { cachedSend, chatInput, journaledChat, withParts } from "./chat-step.js";
import type { CachedCall, CachedResult, ReplyCache } from "./reply-cache.js";
import type { AttemptRedaction } from "./attempt-redaction.js";
import { wrapLanguageModel } from "./language-model-step.js";
import type { SampleBudget } from "./sample-budget.js";
import type { StepJournal } from "./step-journal.js";

/**
 * What the model calls of an attempt (or a scoring) used: the usage of each `ctx.chat` call (a
 * replayed one's marked `reused`: paid for before, not now), and the requests re-sent after
 * retryable failures by any call told `ctx.onRetry`.
 */
export interface Spent {
  usage: Usage[];
  retries: number;
}

/** What a context needs of its attempt's (or scoring's) task. */
export interface ContextTask {
  /** What `ctx.chat` calls (see SolverContext.chat). */
  callModel?: ModelCaller | undefined;
  model?: string | undefined;
  runId: string;
  key: Key;
  /** The run's reply cache (absent: none). */
  cache?: ReplyCache | undefined;
  /** The run's rate limits (absent: none), given to every model call. */
  rateGate?: RateGate | undefined;
  /** The run's provider batches (`--batch`; absent: none): `ctx.batch`. */
  batch?: BatchChannel | undefined;
}

/**
 * The solver's and scorers' context; `spent` collects the usage of every `ctx.chat` call made
 * now, and every re-sent request (`ctx.onRetry`). With a `journal`, `ctx.step` and `ctx.chat` are
 * journaled: a replayed chat call's usage goes to `journal.reused` and to `spent` marked as
 * `reused` (the attempt's usage is its whole trajectory; the interrupted execution paid for that
 * call, so it is no spend now), and a replayed call sends nothing, so it re-sends nothing.
 * With a `redaction`, each `ctx.chat` call's explicit key and header values are secrets of the
 * attempt from the moment it is made (its own journal entry included), replayed or not.
 * With a `budget` (the eval's per-sample limits), every model call and step is checked first
 * and throws LimitReached instead of being made once the attempt reached a limit.
 */
export function context(
  task: ContextTask,
  signal: AbortSignal,
  spent: Spent,
  journal?: StepJournal,
  redaction?: Pick<AttemptRedaction, "learn" | "entry">,
  budget?: SampleBudget,
): SolverContext {
  const { callModel, model, rateGate } = task;
  const onRetry = (): void => {
    spent.retries++;
  };
  const call = async (request: ModelCall): Promise<ModelReply> => {
    if (!callModel) throw new Error("ctx.chat is not available: this eval has no model caller");
    const sent = await callModel(request, {
      signal,
      onRetry,
      ...(model === undefined ? {} : { model }),
      ...(rateGate === undefined ? {} : { rateGate }),
    });
    return withParts(sent);
  };
  // A call or reply that holds a known secret (an endpoint echoing the key) is not stored: the
  // cache, unlike the journal, cannot redact what it serves again.
  const withoutSecrets = <Stored, Entry extends { put(stored: Stored): Promise<void> }>(
    entry: Entry | undefined,
    input: Json,
    stored: (value: Stored) => Json,
  ): Entry | undefined => {
    if (!entry || !redaction) return entry;
    const holds = (value: Json) => redaction.entry(value).found.length > 0;
    const put = async (value: Stored) => {
      if (!holds(input) && !holds(stored(value))) await entry.put(value);
    };
    return { ...entry, put };
  };
  // A call's place in the run's reply cache; none for a call whose target is unknown.
  const cached = (input: Json, target: TargetOf | undefined): CachedCall | undefined => {
    const entry = task.cache && target ? task.cache.call(input, target, task.key.epoch) : undefined;
    return withoutSecrets(entry, input, (reply: ModelReply) => reply as unknown as Json);
  };
  // An AI SDK model call's place in the cache.
  const cachedResult = (
    name: string,
    input: Json,
    languageModel: LanguageModelLike,
  ): CachedResult | undefined => {
    if (!task.cache) return undefined;
    const target = callModel?.languageModel?.target?.(languageModel);
    const entry = target ? task.cache.result(name, input, target, task.key.epoch) : undefined;
    return withoutSecrets(entry, input, (done: { result: Json }) => done.result);
  };
  return {
    runId: task.runId,
    epoch: task.key.epoch,
    signal,
    model,
    onRetry,
    ...(rateGate === undefined ? {} : { rateGate }),
    ...(task.batch === undefined ? {} : { batch: task.batch }),
    async chat(request): Promise<ModelReply> {
      redaction?.learn(chatSecrets(request));
      budget?.beforeCall(callModel?.worstCase?.(request, model));
      const send = async (): Promise<ModelReply> => {
        const reply = await call(request);
        if (reply.usage) spent.usage.push(reply.usage);
        return reply;
      };
      const input = chatInput(request, model);
      const cache = cached(input, callModel?.target?.(request, model));
      if (!journal || request.journal === false) {
        const { reply, hit } = await cachedSend(send, cache);
        // A cached reply was bought by another call: reused, no spend now.
        if (hit && reply.usage) spent.usage.push(reusedUsage(reply.usage));
        return reply;
      }
      const done = await journaledChat(journal, input, send, { cache });
      // A replayed call is still this attempt's trajectory: its usage counts, marked reused
      // (the interrupted execution paid for it) or carried (an errored attempt did), so spend
      // now leaves it out.
      if (done.replayed && done.usage) spent.usage.push(done.usage);
      return done.reply;
    },
    async chatStep(input, send, options) {
      // A judge's call (no journal) is the scorer's, not the sample's: its limits do not apply.
      if (options?.journal !== false) budget?.beforeCall();
      const cache = cached(input, options?.target);
      if (!journal || options?.journal === false) {
        const { reply, hit } = await cachedSend(send, cache);
        const usage = hit && reply.usage ? reusedUsage(reply.usage) : reply.usage;
        return { reply, replayed: hit, usage };
      }
      return journaledChat(journal, input, send, { last: options?.last === true, cache });
    },
    languageModel: (languageModel, options) =>
      wrapLanguageModel(languageModel, {
        generator: callModel?.languageModel,
        signal,
        onRetry,
        journal,
        prices: options?.prices,
        spend: (usage) => void spent.usage.push(usage),
        beforeCall: budget && (() => budget.beforeCall()),
        rateGate,
        cache: task.cache && ((name, input) => cachedResult(name, input, languageModel)),
      }),
    async step<T>(
      name: string,
      input: Json,
      fn: () => Promise<T> | T,
      options?: { journal?: boolean; behind?: boolean },
    ): Promise<T> {
      if (typeof name !== "string" || name === "") {
        throw new Error("ctx.step needs a name (a non-empty string)");
      }
      budget?.beforeStep();
      if (!journal || options?.journal === false) return fn();
      const done = await journal.step(
        "step",
        name,
        input,
        async () => ({ result: await fn() }),
        (thrown) => (signal.aborted ? null : stepError(thrown)),
        { behind: options?.behind === true },
      );
      return done.result as T;
    },
  };
}

const NO_SECRETS: readonly Secret[] = [];

/** A `ctx.chat` call's own credentials: its explicit `apiKey` and its header values. */
function chatSecrets(call: ModelCall): readonly Secret[] {
  const { apiKey, headers } = call;
  if (apiKey === undefined && headers === undefined) return NO_SECRETS;
  // Checked, not trusted: a JavaScript eval may pass anything.
  const text = (value: unknown) => (typeof value === "string" ? value : undefined);
  return [
    ...declaredSecret("ctx.chat apiKey", text(apiKey)),
    ...Object.entries(headers ?? {}).flatMap(([name, value]) =>
      declaredSecret(`ctx.chat header ${name.toLowerCase()}`, text(value)),
    ),
  ];
}

function stepError(thrown: unknown): StepError {
  const message = thrown instanceof Error ? thrown.message : String(thrown);
  const tagged = thrown as { type?: unknown; status?: unknown } | null;
  const error: StepError = { message };
  if (typeof tagged === "object" && tagged !== null) {
    if (typeof tagged.type === "string") error.type = tagged.type;
    if (typeof tagged.status === "number") error.status = tagged.status;
  }
  return error;
}
