import type { Json } from "./json.js";

type JsonObject = { [key: string]: Json };

/**
 * The conversation of a chat step's input: the message list a model call sends, which grows by a
 * reply and a tool result a turn in an agent. `ctx.chat`'s identity holds it as `messages`, an AI
 * SDK call's as `options.prompt`. Undefined for an input without one.
 *
 * The step journal stores a chat step's conversation as the messages added since the key's
 * previous chat step (`StepDraft.inputPrefix`), so an agent's journal grows with its conversation,
 * not with its square.
 *
 * @example conversationOf({ model: "m", messages: [{ role: "user", content: "hi" }] })?.length // 1
 */
export function conversationOf(input: Json): readonly Json[] | undefined {
  if (!isObject(input)) return undefined;
  if (Array.isArray(input.messages)) return input.messages;
  const options = input.options;
  if (isObject(options) && Array.isArray(options.prompt)) return options.prompt;
  return undefined;
}

/**
 * `input` with its conversation (see `conversationOf`) replaced by `messages`: a shallow copy, the
 * rest shared. `input` must have a conversation.
 *
 * @example withConversation({ model: "m", messages: [a, b] }, [b]) // { model: "m", messages: [b] }
 */
export function withConversation(input: Json, messages: readonly Json[]): Json {
  const object = input as JsonObject;
  if (Array.isArray(object.messages)) return { ...object, messages: [...messages] };
  const options = object.options as JsonObject;
  return { ...object, options: { ...options, prompt: [...messages] } };
}

/**
 * Whether `conversation` begins with every message of `earlier`, as JSON (the order of an
 * object's keys aside, as in canonical JSON): a model call's messages are built afresh for each
 * call, and a replayed step's are read back from the store.
 *
 * @example startsWith([a, b, c], [a, b]) // true
 */
export function startsWith(conversation: readonly Json[], earlier: readonly Json[]): boolean {
  if (earlier.length === 0 || conversation.length < earlier.length) return false;
  for (let i = 0; i < earlier.length; i++) {
    if (!sameJson(conversation[i]!, earlier[i]!)) return false;
  }
  return true;
}

/** Deep equality of two JSON values, keys in any order; no text is built (each turn compares a whole conversation). */
function sameJson(a: Json, b: Json): boolean {
  if (a === b) return true;
  if (typeof a !== "object" || typeof b !== "object" || a === null || b === null) return false;
  if (Array.isArray(a) || Array.isArray(b)) {
    if (!Array.isArray(a) || !Array.isArray(b) || a.length !== b.length) return false;
    return a.every((x, i) => sameJson(x, b[i]!));
  }
  const keys = Object.keys(a);
  if (keys.length !== Object.keys(b).length) return false;
  return keys.every((k) => Object.hasOwn(b, k) && sameJson(a[k]!, b[k]!));
}

function isObject(value: Json | undefined): value is JsonObject {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
