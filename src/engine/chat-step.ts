import type { ModelCall, ModelReply, SentReply } from "../core/eval.js";
import type { Json } from "../core/json.js";
import { modelCallIdentity } from "../core/model-call-identity.js";
import { canonicalJson } from "../core/json.js";
import { isLanguageModel } from "../core/language-model.js";
import { completeReply, defaultMessage, modelProvider } from "../core/model-types.js";
import type { ModelMessage, ReplyParts } from "../core/model-types.js";
import type { Usage } from "../core/types.js";
import { reusedUsage } from "../core/usage.js";
import type { CachedCall } from "./reply-cache.js";
import type { StepJournal } from "./step-journal.js";

/** A journaled chat call's reply, and how the call counts in the attempt's usage. */
export interface JournaledReply {
  reply: ModelReply;
  replayed: boolean;
  /**
   * The call's usage as the attempt counts it: the reply's when it was sent now; when replayed,
   * marked reused (an interrupted execution paid for it) or carried (an errored attempt of the
   * key did, and counts it). Undefined when the call reported none.
   */
  usage: Usage | undefined;
}

/**
 * One model call as a journal step of kind `chat`: replayed from the journal on a resumed
 * execution, else sent and recorded before the reply is handed back. The whole reply is
 * recorded (text, tool calls, finish reason, reasoning, message; usage in its own columns), so
 * a replayed agent sees the tool calls it saw; an entry recorded before replies had tool calls
 * (content and model only) replays completed by completeReply. A failed call is not journaled:
 * a resume asks again. With a `cache`, a stored reply is journaled as if it had been sent (a
 * resume replays it) and counted as replayed: reused, no spend now.
 */
export async function journaledChat(
  journal: StepJournal,
  input: Json,
  send: () => Promise<SentReply>,
  options?: { last?: boolean; cache?: CachedCall | undefined },
): Promise<JournaledReply> {
  let sent: ModelReply | undefined;
  let hit = false;
  const done = await journal.step(
    "chat",
    "chat",
    input,
    async () => {
      ({ reply: sent, hit } = await cachedSend(send, options?.cache));
      const { usage, message, ...reply } = sent;
      // The message is left out when the rest makes it (every OpenAI reply): a reply's text is
      // journaled once, not twice.
      return { result: madeByParts(message, reply) ? reply : { ...reply, message }, usage };
    },
    () => null,
    options?.last ? { last: true } : {},
  );
  if (sent && !done.replayed) {
    if (hit) return { reply: sent, replayed: true, usage: sent.usage && reusedUsage(sent.usage) };
    return { reply: sent, replayed: false, usage: sent.usage };
  }
  // The journal's own result (its rows are read through a schema); usage is in its columns.
  const reply: ModelReply = withParts(done.result as unknown as SentReply);
  delete reply.usage;
  if (done.usage) reply.usage = done.usage;
  return { reply, replayed: true, usage: done.replayedUsage ?? undefined };
}

/**
 * A call's reply: the cache's when it has one (`hit`), else sent now and stored in the cache
 * (which keeps no refusal or filtered reply). A failed call stores nothing.
 */
export async function cachedSend(
  send: () => Promise<SentReply>,
  cache: CachedCall | undefined,
): Promise<{ reply: ModelReply; hit: boolean }> {
  const found = await cache?.get();
  if (found) return { reply: found, hit: true };
  const reply = withParts(await send());
  await cache?.put(reply);
  return { reply, hit: false };
}

/** Whether a reply's message is the one its text, tool calls and reasoning make. */
function madeByParts(message: ModelMessage, reply: Omit<ReplyParts, "message">): boolean {
  // The common case without a walk: plain text (and reasoning), no tool calls.
  if (reply.toolCalls.length === 0) {
    const keys = Object.keys(message).length;
    return (
      message.role === "assistant" &&
      message.content === reply.content &&
      !("toolCalls" in message) &&
      (reply.reasoning === undefined
        ? keys === 2
        : keys === 3 && message.reasoning === reply.reasoning)
    );
  }
  return canonicalJson(message) === canonicalJson(defaultMessage(reply));
}

/**
 * A sent reply with every canonical part (see completeReply).
 *
 * @example withParts({ content: "4", model: "m" }).toolCalls // []
 */
export function withParts(reply: SentReply): ModelReply {
  const parts: ReplyParts = completeReply(reply);
  return {
    ...parts,
    model: reply.model,
    ...(reply.usage === undefined ? {} : { usage: reply.usage }),
  };
}

/**
 * What a `ctx.chat` step is keyed and recorded by: the call's identity without its endpoint (see
 * modelCallIdentity: the shape journals have always been hashed by, tools and a provider other
 * than openai added only when the call has them); never key or headers.
 */
export function chatInput(call: ModelCall, model: string | undefined): Json {
  const requested = model ?? call.model ?? null;
  // An AI SDK model is named by its provider string and model id (its endpoint is its own).
  const named = isLanguageModel(requested) ? requested.modelId : requested;
  const provider = isLanguageModel(requested)
    ? requested.provider
    : modelProvider(requested ?? "", call.provider);
  return modelCallIdentity({
    model: named,
    messages: call.messages,
    system: call.system,
    temperature: call.temperature,
    maxTokens: call.maxTokens,
    params: call.params,
    tools: call.tools as Json | undefined,
    toolChoice: call.toolChoice,
    provider,
  });
}
